import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import { describeCause, TableCommitError } from "../../../core/errors.js"
import type { TableFiles } from "../table-files.js"
import { decodeAvroFile } from "./avro.js"
import type { Snapshot } from "./metadata.js"

/** A data file a snapshot lists: where it is, and the size and rows its manifest entry records. */
export interface ListedDataFile {
  readonly location: string
  readonly sizeBytes: number
  readonly recordCount: number
}

const ENTRY_DELETED = 2
const CONTENT_DATA = 0

/** What Rivet reads of a manifest entry (the spec's `manifest_entry`, decoded by avsc with the writer's schema). */
const ManifestEntry = Schema.Struct({
  status: Schema.Number,
  data_file: Schema.Struct({
    content: Schema.optional(Schema.Number),
    file_path: Schema.String,
    file_size_in_bytes: Schema.Number,
    record_count: Schema.Number
  })
})
const decodeEntry = Schema.decodeUnknownEither(ManifestEntry)

const decoded = (files: TableFiles, location: string) =>
  Effect.gen(function* () {
    const key = files.keyOf(location)
    const bytes = key === undefined ? undefined : yield* files.read(key)
    if (bytes === undefined)
      return yield* new TableCommitError({
        table: files.table,
        message: `${location} is missing, or outside the table location ${files.location}`,
        hint: "the table is damaged: restore the file from a backup",
        retryable: false
      })
    return yield* Effect.tryPromise({
      try: () => decodeAvroFile(bytes),
      catch: (cause) =>
        new TableCommitError({ table: files.table, message: `${location} is not an Avro file: ${describeCause(cause)}`, retryable: false, cause })
    })
  })

/** The live data files of a snapshot: every manifest of its manifest list, less the entries it marks deleted. */
export const snapshotDataFiles = (files: TableFiles, snapshot: Snapshot): Effect.Effect<ReadonlyArray<ListedDataFile>, TableCommitError> =>
  Effect.gen(function* () {
    const manifests = yield* decoded(files, snapshot["manifest-list"])
    const entries = yield* Effect.forEach(manifests, (manifest) => decoded(files, String(manifest["manifest_path"])), { concurrency: 4 })
    const listed: Array<ListedDataFile> = []
    for (const raw of entries.flat()) {
      const entry = decodeEntry(raw)
      if (Either.isLeft(entry))
        return yield* new TableCommitError({
          table: files.table,
          message: `a manifest of snapshot ${snapshot["snapshot-id"]} holds an entry that is not an Iceberg manifest entry: ${ParseResult.TreeFormatter.formatErrorSync(entry.left)}`,
          retryable: false
        })
      const { status, data_file: file } = entry.right
      if (status === ENTRY_DELETED || (file.content ?? CONTENT_DATA) !== CONTENT_DATA) continue
      listed.push({ location: file.file_path, sizeBytes: file.file_size_in_bytes, recordCount: file.record_count })
    }
    return listed
  })
