import * as Effect from "effect/Effect"
import type { TableFormatSpec } from "../../config/table-format.js"
import type { SinkDriverShape } from "../../core/plugin.js"
import type { RetryPolicy } from "../../core/retry.js"
import { readFooter } from "../../engine/table-format/iceberg/data-files.js"
import { currentTableFiles, tableNameOf } from "../../engine/table-format/table-format.js"
import { type Finding, finding } from "./findings.js"

/** Data files of the table read at once: one byte range (the footer) each. */
const FILE_CONCURRENCY = 4

/**
 * The export's table (`table_format:`): its current snapshot's data files each present, of the size and with the
 * rows its manifest entry records (the row count from the file's Parquet footer).
 */
export const tableFindings = (
  table: TableFormatSpec,
  sink: SinkDriverShape,
  listing: ReadonlyMap<string, number>,
  options: { readonly retry: RetryPolicy; readonly strict: boolean }
): Effect.Effect<{ readonly findings: ReadonlyArray<Finding>; readonly files: number }> =>
  Effect.gen(function* () {
    const { files, snapshot, dataFiles } = yield* currentTableFiles(table, sink, options.retry)
    if (snapshot === undefined) return { findings: [], files: 0 }
    const checked = yield* Effect.forEach(
      dataFiles,
      (file): Effect.Effect<ReadonlyArray<Finding>> => {
        const key = files.keyOf(file.location)
        const size = key === undefined ? undefined : listing.get(key)
        if (key === undefined || size === undefined)
          return Effect.succeed([finding("TABLE_FILE_MISSING", file.location, `listed by snapshot ${snapshot["snapshot-id"]} of table ${files.table}, but not found`, options.strict)])
        if (size !== file.sizeBytes)
          return Effect.succeed([finding("TABLE_FILE_SIZE", key, `${size} bytes, but the table's manifest records ${file.sizeBytes}`, options.strict)])
        return readFooter(files, key, size).pipe(
          Effect.map((facts) =>
            facts.rowCount === file.recordCount
              ? []
              : [finding("TABLE_FILE_ROWS", key, `${facts.rowCount} rows, but the table's manifest records ${file.recordCount}`, options.strict)]
          ),
          Effect.catchAll((error) => Effect.succeed([finding("TABLE_UNREADABLE", key, error.message, options.strict)]))
        )
      },
      { concurrency: FILE_CONCURRENCY }
    )
    return { findings: checked.flat(), files: dataFiles.length }
  }).pipe(
    Effect.catchAll((error) =>
      Effect.succeed({ findings: [finding("TABLE_UNREADABLE", `table ${tableNameOf(table)}`, error.message, options.strict)], files: 0 })
    )
  )
