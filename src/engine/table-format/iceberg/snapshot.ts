import type { DataFileEntry, ManifestFileEntry } from "./avro.js"
import { currentSnapshot, type Snapshot, type TableMetadata } from "./metadata.js"
import { sameSpec, type IcebergPartitionSpec, type PartitionValue } from "./partition.js"
import type { EvolvedSchema } from "./schema.js"

/** `append` adds the run's files to the table's; `overwrite` replaces every current file with them (full mode). */
export type SnapshotOperation = "append" | "overwrite"

/** What one commit adds to a table, fixed before its first attempt (a retry rebuilds only the metadata around it). */
export interface SnapshotChange {
  readonly operation: SnapshotOperation
  readonly snapshotId: number
  readonly files: ReadonlyArray<DataFileEntry>
  readonly runId: string
}

const little = (bytes: number, write: (view: DataView) => void): Uint8Array => {
  const buffer = new Uint8Array(bytes)
  write(new DataView(buffer.buffer))
  return buffer
}

/** A partition value in Iceberg's single-value binary encoding. */
const encodeValue = (value: Exclude<PartitionValue, null>, avroType: string): Uint8Array => {
  if (typeof value === "string") return new TextEncoder().encode(value)
  if (typeof value === "boolean") return Uint8Array.of(value ? 1 : 0)
  return avroType === "long" ? little(8, (view) => view.setBigInt64(0, BigInt(value), true)) : little(4, (view) => view.setInt32(0, value, true))
}

const order = (a: Exclude<PartitionValue, null>, b: Exclude<PartitionValue, null>): number =>
  typeof a === "number" && typeof b === "number" ? a - b : String(a) < String(b) ? -1 : String(a) > String(b) ? 1 : 0

/** Per partition field of the spec: whether a file has a null there, and the least and greatest values. */
export const partitionSummaries = (
  spec: IcebergPartitionSpec,
  files: ReadonlyArray<DataFileEntry>,
  avroTypeOf: (name: string) => string
): ManifestFileEntry["partitions"] =>
  spec.fields.map((field) => {
    const values = files.map((file) => file.partition[field.name] ?? null)
    const present = values.filter((value): value is Exclude<PartitionValue, null> => value !== null).sort(order)
    const low = present[0]
    const high = present[present.length - 1]
    const type = avroTypeOf(field.name)
    return {
      containsNull: present.length < values.length,
      lower: low === undefined ? null : encodeValue(low, type),
      upper: high === undefined ? null : encodeValue(high, type)
    }
  })

const sum = (files: ReadonlyArray<DataFileEntry>, of: (file: DataFileEntry) => number) => files.reduce((total, file) => total + of(file), 0)

const total = (snapshot: Snapshot | undefined, key: string): number => Number(snapshot?.summary[key] ?? 0)

/** The snapshot summary: what the commit added (and, for an overwrite, removed) and the table's totals after it. */
const summaryOf = (change: SnapshotChange, parent: Snapshot | undefined): Snapshot["summary"] => {
  const added = { files: change.files.length, records: sum(change.files, (f) => f.recordCount), bytes: sum(change.files, (f) => f.sizeBytes) }
  const kept = change.operation === "append"
  const partitions = new Set(change.files.map((file) => JSON.stringify(file.partition)))
  return {
    operation: change.operation,
    "added-data-files": String(added.files),
    "added-records": String(added.records),
    "added-files-size": String(added.bytes),
    "changed-partition-count": String(partitions.size),
    ...(kept
      ? {}
      : {
          "deleted-data-files": String(total(parent, "total-data-files")),
          "deleted-records": String(total(parent, "total-records")),
          "removed-files-size": String(total(parent, "total-files-size"))
        }),
    "total-data-files": String((kept ? total(parent, "total-data-files") : 0) + added.files),
    "total-records": String((kept ? total(parent, "total-records") : 0) + added.records),
    "total-files-size": String((kept ? total(parent, "total-files-size") : 0) + added.bytes),
    "total-delete-files": "0",
    "total-position-deletes": "0",
    "total-equality-deletes": "0",
    "rivet.run-id": change.runId
  }
}

/** What the next metadata is made from: the head it replaces and the parts of this commit. */
export interface NextMetadataInput {
  readonly head: TableMetadata | undefined
  readonly headLocation: string | undefined
  readonly tableUuid: string
  readonly location: string
  readonly evolved: EvolvedSchema
  readonly spec: Omit<IcebergPartitionSpec, "spec-id">
  readonly properties: Readonly<Record<string, string>>
  readonly change: SnapshotChange
  readonly sequenceNumber: number
  readonly manifestList: string
  readonly nowMs: number
}

/** The schema id the commit's files are read with: the current one, or a new one when the run added columns. */
export const schemaIdFor = (head: TableMetadata | undefined, evolved: EvolvedSchema): number =>
  head === undefined ? 0 : evolved.changed ? Math.max(...head.schemas.map((schema) => schema["schema-id"])) + 1 : head["current-schema-id"]

/** The partition spec id the commit's files are written under: the default one when it is the same spec. */
export const specIdFor = (head: TableMetadata | undefined, spec: Omit<IcebergPartitionSpec, "spec-id">): number => {
  if (head === undefined) return 0
  const same = head["partition-specs"].find((each) => sameSpec(each, { ...spec, "spec-id": -1 }))
  return same?.["spec-id"] ?? Math.max(...head["partition-specs"].map((each) => each["spec-id"])) + 1
}

/** The table's metadata after this commit: its schema and spec (added when new), the snapshot, the logs. */
export const nextMetadata = (input: NextMetadataInput): TableMetadata => {
  const { head, evolved, change } = input
  const parent = head === undefined ? undefined : currentSnapshot(head)
  const schemaId = schemaIdFor(head, evolved)
  const specId = specIdFor(head, input.spec)
  const schemas = head?.schemas ?? []
  const specs = head?.["partition-specs"] ?? []
  const snapshot: Snapshot = {
    "snapshot-id": change.snapshotId,
    ...(parent === undefined ? {} : { "parent-snapshot-id": parent["snapshot-id"] }),
    "sequence-number": input.sequenceNumber,
    "timestamp-ms": input.nowMs,
    "manifest-list": input.manifestList,
    summary: summaryOf(change, parent),
    "schema-id": schemaId
  }
  const lastPartitionId = Math.max(head?.["last-partition-id"] ?? 999, ...input.spec.fields.map((field) => field["field-id"]))
  return {
    ...head,
    "format-version": 2,
    "table-uuid": head?.["table-uuid"] ?? input.tableUuid,
    location: head?.location ?? input.location,
    "last-sequence-number": input.sequenceNumber,
    "last-updated-ms": input.nowMs,
    "last-column-id": Math.max(evolved.lastColumnId, head?.["last-column-id"] ?? 0),
    "current-schema-id": schemaId,
    schemas: schemas.some((schema) => schema["schema-id"] === schemaId)
      ? schemas
      : [...schemas, { type: "struct", "schema-id": schemaId, fields: evolved.fields }],
    "default-spec-id": specId,
    "partition-specs": specs.some((spec) => spec["spec-id"] === specId) ? specs : [...specs, { ...input.spec, "spec-id": specId }],
    "last-partition-id": lastPartitionId,
    "default-sort-order-id": head?.["default-sort-order-id"] ?? 0,
    "sort-orders": head?.["sort-orders"] ?? [{ "order-id": 0, fields: [] }],
    properties: { ...head?.properties, ...input.properties },
    "current-snapshot-id": change.snapshotId,
    refs: { ...head?.refs, main: { "snapshot-id": change.snapshotId, type: "branch" } },
    snapshots: [...(head?.snapshots ?? []), snapshot],
    "snapshot-log": [...(head?.["snapshot-log"] ?? []), { "timestamp-ms": input.nowMs, "snapshot-id": change.snapshotId }],
    "metadata-log":
      head === undefined || input.headLocation === undefined
        ? []
        : [...(head["metadata-log"] ?? []), { "timestamp-ms": head["last-updated-ms"], "metadata-file": input.headLocation }]
  }
}
