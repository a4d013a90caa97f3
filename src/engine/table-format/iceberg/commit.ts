import { randomBytes, randomUUID } from "node:crypto"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import type { PartitionSpec } from "../../../config/partition.js"
import type { BatchSchema } from "../../../core/batch.js"
import { describeCause, TableCommitError } from "../../../core/errors.js"
import type { PartRecord } from "../../../core/manifest.js"
import type { Catalog, TableHead } from "../catalog/catalog.js"
import type { TableFiles } from "../table-files.js"
import {
  decodeAvroFile,
  encodeAvroFile,
  manifestEntryRecord,
  manifestEntrySchema,
  manifestFileRecord,
  manifestFileSchema,
  type DataFileEntry
} from "./avro.js"
import { dataFileOf } from "./data-files.js"
import { currentSchema, currentSnapshot, encodeTableMetadata, type TableMetadata } from "./metadata.js"
import { partitionAvroType, partitionProblem, partitionSpecOf, partitionTuple, sameSpec, type IcebergPartitionSpec } from "./partition.js"
import { evolveSchema, type EvolvedSchema, type IcebergField } from "./schema.js"
import { nextMetadata, partitionSummaries, schemaIdFor, specIdFor, type SnapshotOperation } from "./snapshot.js"

/** Commits lost to other writers before a run gives up (each retry reloads the table and rebuilds its metadata). */
const MAX_COMMIT_ATTEMPTS = 10

/** What a committed snapshot is, for the run's report. */
export interface CommittedSnapshot {
  readonly snapshotId: number
  readonly operation: SnapshotOperation
  readonly sequenceNumber: number
  readonly metadataLocation: string
  readonly dataFiles: number
  /** Commits other writers won before this one landed. */
  readonly lostRaces: number
}

/** What a run commits: its parts, its result's columns and how the table's files relate to them. */
export interface CommitInput {
  readonly parts: ReadonlyArray<PartRecord>
  readonly schema: BatchSchema
  readonly operation: SnapshotOperation
  readonly runId: string
  readonly partition: PartitionSpec | undefined
  readonly properties: Readonly<Record<string, string>>
  /** The table's field ids the run's data files were written with. */
  readonly written: EvolvedSchema
}

// Below 2^53, so that every JSON reader keeps the id exact.
const newSnapshotId = (): number => Number(randomBytes(8).readBigUInt64BE() & ((1n << 52n) - 1n)) + 1

const conflict = (files: TableFiles, message: string, hint: string) =>
  new TableCommitError({ table: files.table, message, hint, retryable: false })

/** The ids a run's columns have in `evolved`, which must be those its files carry. */
const idsMoved = (written: EvolvedSchema, evolved: EvolvedSchema, schema: BatchSchema): ReadonlyArray<string> =>
  schema.columns
    .map((column) => column.name)
    .filter((name) => written.fields.find((field) => field.name === name)?.id !== evolved.fields.find((field) => field.name === name)?.id)

/** The spec for `partition_by` on this head: the table's own when it is the same spec, its field ids kept. */
const specOn = (head: TableMetadata | undefined, partition: PartitionSpec | undefined, fields: ReadonlyArray<IcebergField>): IcebergPartitionSpec => {
  const fresh = partitionSpecOf(partition, fields, -1)
  const same = head?.["partition-specs"].find((spec) => sameSpec(spec, fresh))
  if (same !== undefined) return same
  const first = (head?.["last-partition-id"] ?? 999) + 1
  return { "spec-id": specIdFor(head, fresh), fields: fresh.fields.map((field, i) => ({ ...field, "field-id": first + i })) }
}

const promise = <A>(files: TableFiles, what: string, run: () => Promise<A>) =>
  Effect.tryPromise({
    try: run,
    catch: (cause) => new TableCommitError({ table: files.table, message: `could not ${what}: ${describeCause(cause)}`, retryable: false, cause })
  })

/** One attempt: the manifest, the manifest list and the metadata on `head`, then the catalog's compare-and-set. */
const attempt = (
  files: TableFiles,
  catalog: Catalog,
  head: TableHead | undefined,
  input: CommitInput,
  snapshotId: number,
  dataFiles: (spec: IcebergPartitionSpec, fields: ReadonlyArray<IcebergField>) => ReadonlyArray<DataFileEntry>
) =>
  Effect.gen(function* () {
    const metadata = head?.metadata
    const evolved = evolveSchema(metadata === undefined ? undefined : currentSchema(metadata), input.schema, metadata?.["last-column-id"] ?? 0)
    const moved = idsMoved(input.written, evolved, input.schema)
    if (moved.length > 0)
      return yield* conflict(
        files,
        `another writer changed the schema of table ${files.table} while this run wrote its files: column(s) ${moved.join(", ")} now have other field ids`,
        "run the export again: its next run writes files with the table's new ids"
      )
    const spec = specOn(metadata, input.partition, evolved.fields)
    const entries = dataFiles(spec, evolved.fields)
    const sequenceNumber = (metadata?.["last-sequence-number"] ?? 0) + 1
    const schemaId = schemaIdFor(metadata, evolved)
    const tag = randomUUID()
    const manifestKey = `metadata/${tag}-m0.avro`
    const manifest = yield* promise(files, "encode the manifest", () =>
      encodeAvroFile(
        manifestEntrySchema(spec, evolved.fields),
        entries.map((file) => manifestEntryRecord(file, { status: 1, snapshotId, sequenceNumber, fileSequenceNumber: sequenceNumber })),
        {
          schema: JSON.stringify({ type: "struct", "schema-id": schemaId, fields: evolved.fields }),
          "schema-id": String(schemaId),
          "partition-spec": JSON.stringify(spec.fields),
          "partition-spec-id": String(spec["spec-id"]),
          "format-version": "2",
          content: "data"
        }
      )
    )
    yield* files.put(manifestKey, manifest, "application/octet-stream")
    const parent = metadata === undefined ? undefined : currentSnapshot(metadata)
    const kept = input.operation === "append" && parent !== undefined ? yield* previousManifests(files, parent["manifest-list"]) : []
    const avroTypeOf = (name: string) => {
      const type = partitionAvroType(spec.fields.find((field) => field.name === name)!, evolved.fields)
      return typeof type === "string" ? type : type.type
    }
    const listed = manifestFileRecord({
      path: files.locationOf(manifestKey),
      length: manifest.length,
      specId: spec["spec-id"],
      sequenceNumber,
      minSequenceNumber: sequenceNumber,
      addedSnapshotId: snapshotId,
      addedFiles: entries.length,
      existingFiles: 0,
      deletedFiles: 0,
      addedRows: entries.reduce((sum, file) => sum + file.recordCount, 0),
      existingRows: 0,
      deletedRows: 0,
      partitions: partitionSummaries(spec, entries, avroTypeOf)
    })
    const listKey = `metadata/snap-${snapshotId}-1-${tag}.avro`
    const list = yield* promise(files, "encode the manifest list", () =>
      encodeAvroFile(manifestFileSchema, [listed, ...kept], {
        "snapshot-id": String(snapshotId),
        "parent-snapshot-id": parent === undefined ? "null" : String(parent["snapshot-id"]),
        "sequence-number": String(sequenceNumber),
        "format-version": "2"
      })
    )
    yield* files.put(listKey, list, "application/octet-stream")
    const nowMs = yield* Clock.currentTimeMillis
    const next = nextMetadata({
      head: metadata,
      headLocation: head === undefined ? undefined : files.locationOf(head.key),
      tableUuid: randomUUID(),
      location: files.location,
      evolved,
      spec: { fields: spec.fields },
      properties: input.properties,
      change: { operation: input.operation, snapshotId, files: entries, runId: input.runId },
      sequenceNumber,
      manifestList: files.locationOf(listKey),
      nowMs
    })
    const committed = yield* catalog.commit(head, encodeTableMetadata(next))
    return committed === false ? undefined : { key: committed.key, sequenceNumber, dataFiles: entries.length }
  })

/** The manifests of the snapshot an append builds on, as its manifest list holds them. */
const previousManifests = (files: TableFiles, manifestList: string) =>
  Effect.gen(function* () {
    const key = files.keyOf(manifestList)
    const bytes = key === undefined ? undefined : yield* files.read(key)
    if (bytes === undefined)
      return yield* conflict(files, `the current snapshot's manifest list ${manifestList} is missing`, "the table is damaged: restore the file, or start a new table location")
    return yield* promise(files, `read the manifest list ${manifestList}`, () => decodeAvroFile(bytes))
  })

/**
 * Commits a run's parts as one snapshot of the table: reads each part's footer once, then — against the table's
 * head at that moment — writes a manifest, a manifest list and the next metadata, and moves the catalog's pointer.
 * When another writer committed first, the head is reloaded and the snapshot rebuilt on it (its files stay an
 * append on top of the other writer's), up to MAX_COMMIT_ATTEMPTS times.
 */
export const commitSnapshot = Effect.fn("Iceberg.commitSnapshot")(function* (files: TableFiles, catalog: Catalog, input: CommitInput) {
  const problem = input.partition === undefined ? undefined : partitionProblem(input.partition, input.written.fields)
  if (problem !== undefined) return yield* conflict(files, problem, "change partition_by (docs/formats/iceberg.md, Partitioning)")
  const snapshotId = newSnapshotId()
  // The footers are read once; a retry on another head only recomputes the partition tuples for its spec.
  const footers = yield* Effect.forEach(input.parts, (part) => dataFileOf(files, part), { concurrency: 8 })
  const dataFiles = (spec: IcebergPartitionSpec, fields: ReadonlyArray<IcebergField>) =>
    input.parts.map((part, i): DataFileEntry => ({ ...footers[i]!, partition: partitionTuple(spec, fields, part.partition) }))
  for (let lost = 0; lost < MAX_COMMIT_ATTEMPTS; lost++) {
    if (lost > 0) yield* Effect.sleep(`${Math.min(2000, 25 * 2 ** lost) + Math.floor(Math.random() * 25)} millis`)
    const head = yield* catalog.load
    const done = yield* attempt(files, catalog, head, input, snapshotId, dataFiles)
    if (done !== undefined)
      return {
        snapshotId,
        operation: input.operation,
        sequenceNumber: done.sequenceNumber,
        metadataLocation: files.locationOf(done.key),
        dataFiles: done.dataFiles,
        lostRaces: lost
      } satisfies CommittedSnapshot
  }
  return yield* new TableCommitError({
    table: files.table,
    message: `other writers committed to table ${files.table} first ${MAX_COMMIT_ATTEMPTS} times in a row`,
    hint: "run the export again; its files are written, only the snapshot is missing",
    retryable: true
  })
})
