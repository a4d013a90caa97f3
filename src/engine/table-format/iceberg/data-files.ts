import * as Effect from "effect/Effect"
import { describeCause, TableCommitError } from "../../../core/errors.js"
import type { PartRecord } from "../../../core/manifest.js"
import type { TableFiles } from "../table-files.js"
import type { DataFileEntry } from "./avro.js"
import { footerFacts, footerLength } from "./footer.js"
import { partitionTuple, type IcebergPartitionSpec } from "./partition.js"
import type { IcebergField } from "./schema.js"

/** Most footers of Rivet's parts fit in this; a larger one is read again whole. */
const FOOTER_READ_BYTES = 64 * 1024

/**
 * A committed part as a data file of the table: its row count and per-column metrics read back from its Parquet
 * footer at the destination — a byte range, not the file — so parts written by another thread, a worker or an earlier
 * attempt of a resumed run are described from what is stored.
 */
export const dataFileOf = (
  files: TableFiles,
  part: PartRecord,
  spec: IcebergPartitionSpec,
  fields: ReadonlyArray<IcebergField>
): Effect.Effect<DataFileEntry, TableCommitError> =>
  Effect.gen(function* () {
    const size = part.size_bytes
    const unreadable = (cause: unknown) =>
      new TableCommitError({
        table: files.table,
        message: `the data file ${files.locationOf(part.path)} has no readable Parquet footer: ${describeCause(cause)}`,
        hint: "run `rivet validate` on the destination",
        retryable: false,
        cause
      })
    const first = Math.min(size, FOOTER_READ_BYTES)
    let tail = yield* files.readRange(part.path, size - first, first)
    const length = yield* Effect.try({ try: () => footerLength(tail), catch: unreadable })
    if (length + 8 > tail.length) tail = yield* files.readRange(part.path, size - length - 8, length + 8)
    const facts = yield* Effect.try({ try: () => footerFacts(tail), catch: unreadable })
    if (facts.rowCount !== part.rows)
      return yield* new TableCommitError({
        table: files.table,
        message: `the data file ${files.locationOf(part.path)} holds ${facts.rowCount} rows, but the run wrote ${part.rows} there`,
        hint: "another writer replaced the file: run the export again",
        retryable: false
      })
    return {
      path: files.locationOf(part.path),
      recordCount: part.rows,
      sizeBytes: size,
      partition: partitionTuple(spec, fields, part.partition),
      columnSizes: facts.columnSizes,
      valueCounts: facts.valueCounts,
      nullCounts: facts.nullCounts,
      lowerBounds: facts.lowerBounds,
      upperBounds: facts.upperBounds
    } satisfies DataFileEntry
  })
