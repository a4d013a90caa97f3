import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Batch, BatchSchema } from "../core/batch.js"
import type { FormatError } from "../core/errors.js"
import type { FormatDriverShape, PartEncoder, PartInfo, RenderedChunk, RenderedPartEncoder } from "../core/plugin.js"
import { type OversizedRow, writeWithinCap } from "./capped-write.js"
import { takeRows } from "./partition/take.js"

/** Rows `[from, from + count)` of a batch (the batch itself when that is all of it). */
const sliceRows = (batch: Batch, from: number, count: number): Batch => {
  if (from === 0 && count === batch.rowCount) return batch
  const rows = Int32Array.from({ length: count }, (_, i) => from + i)
  return takeRows(batch, batch.schema, batch.columns.map((_, i) => i), rows, count)
}

/**
 * Cuts a batch where parts of at most `rowsPerPart` rows end, given the rows of the part it starts in: the pieces
 * and, for each, whether a part ends after it.
 */
const piecesForParts = (batch: Batch, partRows: number, rowsPerPart: number | undefined): ReadonlyArray<{ batch: Batch; ends: boolean }> => {
  if (rowsPerPart === undefined) return [{ batch, ends: false }]
  const pieces: Array<{ batch: Batch; ends: boolean }> = []
  let from = 0
  let room = rowsPerPart - partRows
  while (from < batch.rowCount) {
    const count = Math.min(room, batch.rowCount - from)
    pieces.push({ batch: sliceRows(batch, from, count), ends: count === room })
    from += count
    room = rowsPerPart
  }
  return pieces
}

/** Encoded output, tagged with the part it belongs to. `end` closes a part and carries its row count. */
export type PartPiece =
  | { readonly _tag: "bytes"; readonly part: number; readonly bytes: Uint8Array }
  | { readonly _tag: "end"; readonly part: number; readonly rows: number }

/** An encoder of one part for inputs of type `A` (batches, or rows a source rendered). */
interface InputEncoder<A> {
  readonly write: (input: A) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
}

/** The cap on a part's size, and what to do with a row that alone is larger. */
export interface PartCap {
  readonly maxBytes: number
  /**
   * How a notice names a batch's rows (`unitRow`: a row's number in the unit, from 1). Asked before the batch is
   * written: an encoder thread takes its buffers, so the namer keeps copies of what it reads.
   */
  readonly rowNamer: (batch: Batch) => (index: number, unitRow: number) => string
  readonly oversized: (row: OversizedRow) => Effect.Effect<void>
}

/** Parts of inputs written whole (rendered rows, or batches without a cap): a part is closed at the end only. */
const encodeInputs = <A, E, R>(
  inputs: Stream.Stream<A, E, R>,
  rowsOf: (input: A) => number,
  open: Effect.Effect<InputEncoder<A>, FormatError>,
  /** Splits an input where parts end (`piecesForParts`); by default a part ends with the stream only. */
  split: (input: A, partRows: number) => ReadonlyArray<{ batch: A; ends: boolean }> = (input) => [{ batch: input, ends: false }]
): Stream.Stream<PartPiece, E | FormatError, R> =>
  Stream.suspend(() => {
    let encoder: InputEncoder<A> | undefined
    let part = -1
    let partRows = 0

    const emit = (chunks: ReadonlyArray<Uint8Array>, out: Array<PartPiece>) => {
      for (const bytes of chunks) if (bytes.length > 0) out.push({ _tag: "bytes", part, bytes })
    }

    const closePart = (out: Array<PartPiece>) =>
      Effect.gen(function* () {
        if (!encoder) return out
        const current = encoder
        encoder = undefined
        emit(yield* current.finish, out)
        out.push({ _tag: "end", part, rows: partRows })
        return out
      })

    const onInput = (input: A) =>
      Effect.gen(function* () {
        const out: Array<PartPiece> = []
        if (rowsOf(input) === 0) return out
        for (const piece of split(input, encoder ? partRows : 0)) {
          if (!encoder) {
            encoder = yield* open
            part++
            partRows = 0
          }
          emit(yield* encoder.write(piece.batch), out)
          partRows += rowsOf(piece.batch)
          if (piece.ends) yield* closePart(out)
        }
        return out
      })

    return inputs.pipe(
      Stream.mapEffect(onInput),
      Stream.concat(Stream.fromEffect(Effect.suspend(() => closePart([])))),
      Stream.flattenIterables
    )
  })

/** One part being written under a cap: its encoder, number, bytes handed on, rows, and the first row's place. */
export interface CappedPart {
  readonly encoder: PartEncoder
  readonly part: number
  bytes: number
  rows: number
  /** How a notice would name the part's first row. */
  first?: string | undefined
}

/** Adds `chunks` to the part's output. */
export const emitInto = (current: CappedPart, chunks: ReadonlyArray<Uint8Array>, out: Array<PartPiece>): void => {
  for (const bytes of chunks) {
    if (bytes.length === 0) continue
    current.bytes += bytes.length
    out.push({ _tag: "bytes", part: current.part, bytes })
  }
}

/** Finishes a capped part: its last bytes, its `end`, and the notice when its single row is larger than the cap. */
export const closeCapped = (current: CappedPart, cap: PartCap, out: Array<PartPiece>) =>
  Effect.gen(function* () {
    emitInto(current, yield* current.encoder.finish, out)
    out.push({ _tag: "end", part: current.part, rows: current.rows })
    if (current.rows === 1 && current.bytes > cap.maxBytes && current.first !== undefined)
      yield* cap.oversized({ row: current.first, bytes: current.bytes, part: current.part })
  })

/**
 * Writes a batch's rows into capped parts: as many as the current part takes (`writeWithinCap`), then the part is
 * finished and the rest offered to a part `next` opens — so every part ends before the row that would cross the cap.
 * `nameRow` names a row of the batch for a notice (see `PartCap.rowNamer`).
 */
export const writeCapped = (
  batch: Batch,
  cap: PartCap,
  format: string,
  nameRow: (index: number) => string,
  current: () => CappedPart | undefined,
  next: () => Effect.Effect<CappedPart, FormatError>,
  closed: (part: CappedPart) => void,
  out: Array<PartPiece>
) =>
  Effect.gen(function* () {
    let from = 0
    while (from < batch.rowCount) {
      const part = current() ?? (yield* next())
      if (part.rows === 0) part.first = nameRow(from)
      const written = yield* writeWithinCap(part.encoder, batch, from, cap.maxBytes, part, format)
      emitInto(part, written.bytes, out)
      part.rows += written.rows
      from += written.rows
      if (from < batch.rowCount) {
        closed(part)
        yield* closeCapped(part, cap, out)
      }
    }
  })

/** `encodeParts` under a cap: parts closed before the row that would cross it (see `writeCapped`). */
const encodeCappedParts = <E, R>(
  batches: Stream.Stream<Batch, E, R>,
  format: FormatDriverShape,
  schema: BatchSchema,
  cap: PartCap,
  info: PartInfo | undefined,
  rowsPerPart: number | undefined
): Stream.Stream<PartPiece, E | FormatError, R> =>
  Stream.suspend(() => {
    let current: CappedPart | undefined
    let nextPart = 0
    let unitRows = 0
    const next = Effect.map(format.open(schema, info), (encoder) => {
      current = { encoder, part: nextPart++, bytes: 0, rows: 0 }
      return current
    })
    const onBatch = (batch: Batch) =>
      Effect.gen(function* () {
        const out: Array<PartPiece> = []
        if (batch.rowCount === 0) return out
        const before = unitRows
        unitRows += batch.rowCount
        let offset = 0
        for (const piece of piecesForParts(batch, current?.rows ?? 0, rowsPerPart)) {
          const namer = cap.rowNamer(piece.batch)
          const at = before + offset
          yield* writeCapped(piece.batch, cap, format.extension, (index) => namer(index, at + index + 1), () => current, () => next, () => (current = undefined), out)
          offset += piece.batch.rowCount
          if (piece.ends && current !== undefined) {
            const full = current
            current = undefined
            yield* closeCapped(full, cap, out)
          }
        }
        return out
      })
    const closeLast = Effect.suspend(() => {
      const out: Array<PartPiece> = []
      const last = current
      current = undefined
      return last === undefined ? Effect.succeed(out) : Effect.as(closeCapped(last, cap, out), out)
    })
    return batches.pipe(Stream.mapEffect(onBatch), Stream.concat(Stream.fromEffect(closeLast)), Stream.flattenIterables)
  })

/**
 * Encodes batches into a stream of parts. A part is opened on the first non-empty batch (an export with no rows has
 * no part) and closed at the end of the stream; with a cap (`max_file_size`), also before the first row that would
 * make it larger than the cap — within a batch if need be — so no part is larger, but for a single row larger than
 * the cap alone (written alone in its part, and reported through `cap.oversized`); with `rowsPerPart`, also once it
 * holds that many rows.
 */
export const encodeParts = <E, R>(
  batches: Stream.Stream<Batch, E, R>,
  format: FormatDriverShape,
  schema: BatchSchema,
  cap: PartCap | undefined,
  part?: PartInfo,
  /** Parts hold at most this many rows (`cdc.rollover`). */
  rowsPerPart?: number
): Stream.Stream<PartPiece, E | FormatError, R> =>
  cap === undefined
    ? encodeInputs(batches, (batch) => batch.rowCount, format.open(schema, part), (batch, partRows) => piecesForParts(batch, partRows, rowsPerPart))
    : encodeCappedParts(batches, format, schema, cap, part, rowsPerPart)

/**
 * `encodeParts` for rows a source rendered in the format's dialect, without a cap: a rendered chunk is bytes, which
 * cannot be cut at a row boundary without parsing them, so a capped export reads batches instead (run-unit.ts).
 */
export const encodeRenderedParts = <E, R>(
  chunks: Stream.Stream<RenderedChunk, E, R>,
  open: Effect.Effect<RenderedPartEncoder, FormatError>
): Stream.Stream<PartPiece, E | FormatError, R> =>
  encodeInputs(
    chunks,
    (chunk) => chunk.rows,
    Effect.map(open, (encoder): InputEncoder<RenderedChunk> => ({
      write: (chunk) => encoder.write(chunk.bytes),
      finish: encoder.finish
    }))
  )
