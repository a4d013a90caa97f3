import type * as Effect from "effect/Effect"
import type { Batch, BatchSchema } from "../batch.js"
import type { FormatError } from "../errors.js"

/** What `PartEncoder.writeCapped` wrote: the bytes ready so far and how many of the offered rows they hold. */
export interface CappedWrite {
  readonly bytes: ReadonlyArray<Uint8Array>
  readonly rows: number
}

/** Encodes the batches of one output part. `write` returns the bytes ready so far (possibly none). */
export interface PartEncoder {
  readonly write: (batch: Batch) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  /** Ends the part (e.g. the Parquet footer) and returns the remaining bytes. */
  readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  /**
   * For `max_file_size`: encodes the longest run of the batch's rows from row `from` on that keeps the whole part —
   * every byte this encoder returned, these bytes, and what `finish` will still add — within `maxBytes`, and says how
   * many rows it took. The rows it did not take are the runtime's: it finishes this part and offers them to the
   * next one (the same batch object, a later `from`). A part with no row yet takes its first row whatever its size
   * (a single row larger than the cap is written alone). Once a part is written with `writeCapped`, `write` is not
   * called on it. Optional: without it the runtime cuts batches into slices sized from the bytes per row seen so far
   * and closes a part once the next slice would cross the cap — a bound only as good as that estimate, and none for
   * a format that holds bytes back until `finish` (docs/config.md, `max_file_size`).
   */
  readonly writeCapped?: (batch: Batch, from: number, maxBytes: number) => Effect.Effect<CappedWrite, FormatError>
}

/** Encodes one output part from rows a source rendered (see `SourceDriverShape.openRendered`). */
export interface RenderedPartEncoder {
  readonly write: (rows: Uint8Array) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
}

/** Which export and run a part belongs to, for formats that record it in the file (Parquet's key/value metadata). */
export interface PartInfo {
  readonly exportName: string
  readonly runId: string
}

/**
 * A format's part encoders, made once: `open` gives a fresh encoder per part. A driver's `open` is this after its
 * check of the schema; `part` is absent when the part belongs to no run (a test).
 */
export type PartOpener = (schema: BatchSchema, part: PartInfo | undefined) => Effect.Effect<PartEncoder, FormatError>
