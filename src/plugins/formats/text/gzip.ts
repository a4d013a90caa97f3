import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as zlib from "node:zlib"
import { describeCause, FormatError } from "../../../core/errors.js"

/** Compression of a text format's parts. */
export type TextCompression = "none" | "gzip"

/**
 * The `compression` key of a text format: `none` (default) or `gzip`. `label` names the format in the message
 * shown for any other value (`CSV output supports compression none or gzip, not "zstd"`).
 */
export const textCompressionField = (label: string) =>
  Schema.optionalWith(
    Schema.Literal("none", "gzip").annotations({
      message: (issue) => ({
        message: `${label} output supports compression none or gzip, not ${JSON.stringify(issue.actual)}`,
        override: true
      })
    }),
    { default: (): TextCompression => "none", exact: true }
  ).annotations({
    description: `Compression of each ${label} part: none (default) or gzip (one gzip stream per file, extension .gz).`
  })

/** A part encoder of some input (batches, or rows a source rendered): bytes out as they are ready. */
export interface ChunkEncoder<I> {
  readonly write: (input: I) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
}

/**
 * Wraps a part encoder so that each part is one gzip member, compressed as it streams. The zlib stream runs in
 * paused mode and is drained after every write, so what `write` returns is whatever zlib has produced so far and
 * memory stays bounded by one batch; `finish` ends the member (trailer with CRC32 and length).
 */
export const gzipPart = <I>(inner: ChunkEncoder<I>, format: string): Effect.Effect<ChunkEncoder<I>, FormatError> =>
  Effect.sync(() => {
    const gzip = zlib.createGzip()
    let pending: Array<Uint8Array> = []
    let failure: unknown = undefined
    const drain = () => {
      let chunk: Buffer | null
      while ((chunk = gzip.read() as Buffer | null) !== null) pending.push(chunk)
    }
    gzip.on("readable", drain)
    gzip.on("error", (error) => {
      failure ??= error
    })

    const takePending = (): ReadonlyArray<Uint8Array> => {
      const out = pending
      pending = []
      return out
    }
    const fail = (cause: unknown) =>
      new FormatError({ format, message: `gzip compression failed: ${describeCause(cause)}` })

    const compress = (input: ReadonlyArray<Uint8Array>) =>
      Effect.async<ReadonlyArray<Uint8Array>, FormatError>((resume) => {
        if (failure !== undefined) return resume(Effect.fail(fail(failure)))
        const chunks = input.filter((chunk) => chunk.byteLength > 0)
        const last = chunks.length - 1
        if (last < 0) return resume(Effect.succeed(takePending()))
        chunks.forEach((chunk, i) => {
          gzip.write(
            chunk,
            i < last
              ? undefined
              : (error) => {
                  if (error) return resume(Effect.fail(fail(error)))
                  drain()
                  resume(Effect.succeed(takePending()))
                }
          )
        })
        return Effect.sync(() => gzip.destroy())
      })

    const end = Effect.async<ReadonlyArray<Uint8Array>, FormatError>((resume) => {
      if (failure !== undefined) return resume(Effect.fail(fail(failure)))
      // zlib pushes the trailer after `finish`; only `end` on the readable side means every byte was read.
      gzip.once("end", () => resume(Effect.succeed(takePending())))
      gzip.once("error", (error) => resume(Effect.fail(fail(error))))
      gzip.end()
      drain()
      return Effect.sync(() => gzip.destroy())
    })

    return {
      write: (input: I) => Effect.flatMap(inner.write(input), compress),
      finish: Effect.flatMap(inner.finish, (tail) =>
        Effect.flatMap(compress(tail), (head) => Effect.map(end, (rest) => [...head, ...rest]))
      )
    }
  })
