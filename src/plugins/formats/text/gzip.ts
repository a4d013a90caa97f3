import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as zlib from "node:zlib"
import { describeCause, FormatError } from "../../../core/errors.js"
import type { CappedWrite } from "../../../core/plugin.js"

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
  /** See `PartEncoder.writeCapped`. */
  readonly writeCapped?: (input: I, from: number, maxBytes: number) => Effect.Effect<CappedWrite, FormatError>
}

/**
 * What deflate may add to `input` bytes not yet compressed, at worst (stored blocks), plus the gzip header, the
 * final block and the trailer: zlib's `deflateBound` is input + input/4096 + input/16384 + 25; this rounds up.
 */
const worstCase = (input: number): number => input + Math.ceil(input / 1024) + 64

/** Under a cap, a part stops refining once the room left is below this share of the cap (each step is a flush). */
const REFINE_STOP = 64

/**
 * Wraps a part encoder so that each part is one gzip member, compressed as it streams. The zlib stream runs in
 * paused mode and is drained after every write, so what `write` returns is whatever zlib has produced so far and
 * memory stays bounded by one batch; `finish` ends the member (trailer with CRC32 and length). With `rowsOf` (the
 * rows of an input) and an inner encoder that writes within a cap, the part writes within a cap on its compressed
 * size too.
 */
export const gzipPart = <I>(
  inner: ChunkEncoder<I>,
  format: string,
  rowsOf?: (input: I) => number
): Effect.Effect<ChunkEncoder<I>, FormatError> =>
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

    // zlib's chunks are views of a buffer it goes on writing into (or of Node's shared pool): they leave as one copy
    // of their own, which the runtime, or an encoder thread's reply, may hand over and free.
    const takePending = (): ReadonlyArray<Uint8Array> => {
      const out = pending
      pending = []
      if (out.length === 0) return out
      const copy = new Uint8Array(out.reduce((length, chunk) => length + chunk.byteLength, 0))
      let at = 0
      for (const chunk of out) {
        copy.set(chunk, at)
        at += chunk.byteLength
      }
      return [copy]
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

    // For `writeCapped`: compressed bytes out so far, and uncompressed bytes in since zlib last flushed them all out.
    let compressed = 0
    let unflushed = 0
    let innerBytes = 0
    const counted = (chunks: ReadonlyArray<Uint8Array>) => {
      for (const chunk of chunks) compressed += chunk.byteLength
      return chunks
    }
    const syncFlush = Effect.async<ReadonlyArray<Uint8Array>, FormatError>((resume) => {
      if (failure !== undefined) return resume(Effect.fail(fail(failure)))
      gzip.flush(zlib.constants.Z_SYNC_FLUSH, () => {
        if (failure !== undefined) return resume(Effect.fail(fail(failure)))
        drain()
        unflushed = 0
        resume(Effect.succeed(takePending()))
      })
    })
    /**
     * The inner encoder gets as many uncompressed bytes as would fit even if none compressed; when it stops short,
     * a sync flush tells the exact compressed size and the room left is offered again — until the next row does not
     * fit at worst, or the room left is a small share of the cap. Flushes cost a few bytes each, and only a capped
     * part pays them.
     */
    const writeCapped = (capped: NonNullable<ChunkEncoder<I>["writeCapped"]>) => (input: I, from: number, maxBytes: number) =>
      Effect.gen(function* () {
        const out: Array<Uint8Array> = []
        let at = from
        let taken = 0
        for (;;) {
          const room = maxBytes - compressed - worstCase(unflushed)
          const allowance = Math.max(0, Math.floor((room * 1024) / 1025))
          const written = yield* capped(input, at, innerBytes + allowance)
          let raw = 0
          for (const chunk of written.bytes) raw += chunk.byteLength
          innerBytes += raw
          unflushed += raw
          out.push(...counted(yield* compress(written.bytes)))
          taken += written.rows
          at += written.rows
          if (at >= (rowsOf?.(input) ?? at) || written.rows === 0) return { bytes: out, rows: taken } satisfies CappedWrite
          out.push(...counted(yield* syncFlush))
          if (maxBytes - compressed - worstCase(0) < maxBytes / REFINE_STOP) return { bytes: out, rows: taken } satisfies CappedWrite
        }
      })

    return {
      ...(inner.writeCapped === undefined || rowsOf === undefined ? {} : { writeCapped: writeCapped(inner.writeCapped) }),
      write: (input: I) => Effect.flatMap(inner.write(input), compress),
      finish: Effect.flatMap(inner.finish, (tail) =>
        Effect.flatMap(compress(tail), (head) => Effect.map(end, (rest) => [...head, ...rest]))
      )
    }
  })
