import * as Effect from "effect/Effect"
import type { Batch } from "../core/batch.js"
import { FormatError } from "../core/errors.js"
import type { CappedWrite, PartEncoder } from "../core/plugin.js"
import { takeRows } from "./partition/take.js"

/** What the runtime knows of the part being written: the bytes handed on and the rows in it. */
export interface PartFill {
  readonly bytes: number
  readonly rows: number
}

/**
 * A slice is at most this share of the cap when a format cannot write within a cap itself, so the estimate of its
 * size (bytes per row seen so far) is refined several times per part.
 */
const FALLBACK_SLICES_PER_PART = 8
/** Rows offered to a fallback part before any of its bytes were seen. */
const FALLBACK_FIRST_ROWS = 64

const rowRange = (batch: Batch, from: number, to: number): Batch => {
  if (from === 0 && to === batch.rowCount) return batch
  const rows = new Int32Array(to - from)
  for (let i = 0; i < rows.length; i++) rows[i] = from + i
  return takeRows(batch, batch.schema, batch.columns.map((_, index) => index), rows, rows.length)
}

/**
 * For a format without `writeCapped`: slices of rows from `from` whose size, at the bytes per row seen so far, keep
 * the part within the cap; stops before the slice that would cross it. A format that has handed on no bytes yet
 * gives no estimate: it gets a first small slice, then the rest of the batch.
 */
const fallbackWrite = (encoder: PartEncoder, batch: Batch, from: number, maxBytes: number, fill: PartFill) =>
  Effect.gen(function* () {
    const out: Array<Uint8Array> = []
    let bytes = fill.bytes
    let rows = fill.rows
    let at = from
    while (at < batch.rowCount) {
      const rest = batch.rowCount - at
      let count: number
      if (rows === 0) count = Math.min(rest, FALLBACK_FIRST_ROWS)
      else if (bytes === 0) count = rest
      else {
        const perRow = bytes / rows
        const room = Math.floor((maxBytes - bytes) / perRow)
        count = Math.min(rest, room, Math.max(1, Math.floor(maxBytes / FALLBACK_SLICES_PER_PART / perRow)))
      }
      if (count <= 0) break
      const written = yield* encoder.write(rowRange(batch, at, at + count))
      for (const chunk of written) bytes += chunk.byteLength
      out.push(...written)
      rows += count
      at += count
    }
    return { bytes: out, rows: at - from } satisfies CappedWrite
  })

/**
 * Writes rows of `batch` from `from` on into the part as far as `maxBytes` allows (see `PartEncoder.writeCapped`),
 * and fails when an encoder breaks the contract by taking no row into an empty part (the runtime would loop).
 */
export const writeWithinCap = (
  encoder: PartEncoder,
  batch: Batch,
  from: number,
  maxBytes: number,
  fill: PartFill,
  format: string
): Effect.Effect<CappedWrite, FormatError> =>
  Effect.flatMap(
    encoder.writeCapped === undefined
      ? fallbackWrite(encoder, batch, from, maxBytes, fill)
      : encoder.writeCapped(batch, from, maxBytes),
    (written) =>
      written.rows === 0 && fill.rows === 0
        ? Effect.fail(
            new FormatError({
              format,
              message: "the format's encoder took no row into an empty part under max_file_size",
              hint: "a format's writeCapped must take at least the first row of an empty part; report the issue to the format's author"
            })
          )
        : Effect.succeed(written)
  )

/** A row written alone into a part larger than the cap: how a notice names it, and the part's number and size. */
export interface OversizedRow {
  readonly row: string
  readonly bytes: number
  readonly part: number
}
