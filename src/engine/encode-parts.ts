import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Batch, BatchSchema } from "../core/batch.js"
import type { FormatError } from "../core/errors.js"
import type { FormatDriverShape, PartInfo, RenderedChunk, RenderedPartEncoder } from "../core/plugin.js"

/** Encoded output, tagged with the part it belongs to. `end` closes a part and carries its row count. */
export type PartPiece =
  | { readonly _tag: "bytes"; readonly part: number; readonly bytes: Uint8Array }
  | { readonly _tag: "end"; readonly part: number; readonly rows: number }

/** An encoder of one part for inputs of type `A` (batches, or rows a source rendered). */
interface InputEncoder<A> {
  readonly write: (input: A) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
}

const encodeInputs = <A, E, R>(
  inputs: Stream.Stream<A, E, R>,
  rowsOf: (input: A) => number,
  open: Effect.Effect<InputEncoder<A>, FormatError>,
  maxFileSize: number | undefined
): Stream.Stream<PartPiece, E | FormatError, R> =>
  Stream.suspend(() => {
    let encoder: InputEncoder<A> | undefined
    let part = -1
    let partBytes = 0
    let partRows = 0

    const emit = (chunks: ReadonlyArray<Uint8Array>, out: Array<PartPiece>) => {
      for (const bytes of chunks) {
        if (bytes.length === 0) continue
        partBytes += bytes.length
        out.push({ _tag: "bytes", part, bytes })
      }
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
        const rows = rowsOf(input)
        if (rows === 0) return out
        if (!encoder) {
          encoder = yield* open
          part++
          partBytes = 0
          partRows = 0
        }
        emit(yield* encoder.write(input), out)
        partRows += rows
        if (maxFileSize !== undefined && partBytes >= maxFileSize) yield* closePart(out)
        return out
      })

    return inputs.pipe(
      Stream.mapEffect(onInput),
      Stream.concat(Stream.fromEffect(Effect.suspend(() => closePart([])))),
      Stream.flattenIterables
    )
  })

/**
 * Encodes batches into a stream of parts. A part is opened on the first non-empty batch (an export with
 * no rows has no part) and closed at the end of the stream or, with `maxFileSize`, as soon as its encoded
 * bytes reach that size (checked after each batch, so a part can exceed it by what one batch adds).
 */
export const encodeParts = <E, R>(
  batches: Stream.Stream<Batch, E, R>,
  format: FormatDriverShape,
  schema: BatchSchema,
  maxFileSize: number | undefined,
  part?: PartInfo
): Stream.Stream<PartPiece, E | FormatError, R> =>
  encodeInputs(batches, (batch) => batch.rowCount, format.open(schema, part), maxFileSize)

/**
 * `encodeParts` for rows a source rendered in the format's dialect: the same parts, opened and closed at the same
 * points (a chunk holds whole rows, so a part always ends on a row boundary).
 */
export const encodeRenderedParts = <E, R>(
  chunks: Stream.Stream<RenderedChunk, E, R>,
  open: Effect.Effect<RenderedPartEncoder, FormatError>,
  maxFileSize: number | undefined
): Stream.Stream<PartPiece, E | FormatError, R> =>
  encodeInputs(
    chunks,
    (chunk) => chunk.rows,
    Effect.map(open, (encoder): InputEncoder<RenderedChunk> => ({
      write: (chunk) => encoder.write(chunk.bytes),
      finish: encoder.finish
    })),
    maxFileSize
  )
