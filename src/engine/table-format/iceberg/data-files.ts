import * as Effect from "effect/Effect"
import { describeCause, TableCommitError } from "../../../core/errors.js"
import type { PartRecord } from "../../../core/manifest.js"
import type { TableFiles } from "../table-files.js"
import type { DataFileEntry } from "./avro.js"
import { footerFacts, footerLength, type FooterFacts } from "./footer.js"

/** Most footers of Rivet's parts fit in this; a larger one is read again whole. */
const FOOTER_READ_BYTES = 64 * 1024

/**
 * A committed part as a data file of the table (its partition tuple aside, which depends on the spec of the head
 * a commit builds on): its row count and per-column metrics read back from its Parquet
 * footer at the destination — a byte range, not the file — so parts written by another thread, a worker or an earlier
 * attempt of a resumed run are described from what is stored.
 */
export const dataFileOf = (files: TableFiles, part: PartRecord): Effect.Effect<Omit<DataFileEntry, "partition">, TableCommitError> =>
  Effect.gen(function* () {
    const facts = yield* readFooter(files, part.path, part.size_bytes)
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
      sizeBytes: part.size_bytes,
      columnSizes: facts.columnSizes,
      valueCounts: facts.valueCounts,
      nullCounts: facts.nullCounts,
      lowerBounds: facts.lowerBounds,
      upperBounds: facts.upperBounds
    }
  })

/** A stored Parquet file's footer facts, read as one byte range at its end (two when the footer is large). */
export const readFooter = (files: TableFiles, key: string, size: number): Effect.Effect<FooterFacts, TableCommitError> =>
  Effect.gen(function* () {
    const unreadable = (cause: unknown) =>
      new TableCommitError({
        table: files.table,
        message: `the data file ${files.locationOf(key)} has no readable Parquet footer: ${describeCause(cause)}`,
        hint: "run `rivet validate` on the destination",
        retryable: false,
        cause
      })
    const first = Math.min(size, FOOTER_READ_BYTES)
    let tail = yield* files.readRange(key, size - first, first)
    const length = yield* Effect.try({ try: () => footerLength(tail), catch: unreadable })
    if (length + 8 > tail.length) tail = yield* files.readRange(key, size - length - 8, length + 8)
    return yield* Effect.try({ try: () => footerFacts(tail), catch: unreadable })
  })
