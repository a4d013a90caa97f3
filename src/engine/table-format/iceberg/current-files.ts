import * as Effect from "effect/Effect"
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
    return entries.flat().flatMap((entry) => {
      if (entry["status"] === ENTRY_DELETED) return []
      const file = entry["data_file"] as { readonly file_path: string; readonly file_size_in_bytes: number; readonly record_count: number; readonly content?: number }
      return file.content !== undefined && file.content !== 0
        ? []
        : [{ location: file.file_path, sizeBytes: Number(file.file_size_in_bytes), recordCount: Number(file.record_count) }]
    })
  })
