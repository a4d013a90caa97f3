import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { describeCause, FormatError } from "../../../core/errors.js"

/** Bytes kept from the end of a part on the first read: enough for the footers Rivet writes. */
const TAIL_BYTES = 1024 * 1024

/** The last `limit` bytes of a stream (and its total length), holding at most `limit` plus one chunk. */
const tailOf = <E>(bytes: Stream.Stream<Uint8Array, E>, limit: number) =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let held = 0
    let total = 0
    return Stream.runForEach(bytes, (chunk) =>
      Effect.sync(() => {
        chunks.push(chunk)
        held += chunk.length
        total += chunk.length
        while (chunks.length > 1 && held - chunks[0]!.length >= limit) held -= chunks.shift()!.length
      })
    ).pipe(Effect.map(() => ({ tail: concat(chunks).subarray(Math.max(0, held - limit)), total })))
  })

/** The bytes from `offset` to the end of a stream. */
const fromOffset = <E>(bytes: Stream.Stream<Uint8Array, E>, offset: number) =>
  Effect.suspend(() => {
    const chunks: Array<Uint8Array> = []
    let position = 0
    return Stream.runForEach(bytes, (chunk) =>
      Effect.sync(() => {
        const start = Math.max(0, offset - position)
        if (start < chunk.length) chunks.push(chunk.subarray(start))
        position += chunk.length
      })
    ).pipe(Effect.map(() => concat(chunks)))
  })

const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(chunks.reduce((sum, chunk) => sum + chunk.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

const invalid = (key: string, reason: string) =>
  new FormatError({ format: "parquet", message: `${key} is not a readable Parquet file: ${reason}` })

/** The footer length from the last 8 bytes (`<length, u32 LE>PAR1`). */
const footerLength = (key: string, tail: Uint8Array): Effect.Effect<number, FormatError> => {
  if (tail.length < 12) return Effect.fail(invalid(key, `only ${tail.length} bytes long`))
  const view = new DataView(tail.buffer, tail.byteOffset, tail.byteLength)
  if (view.getUint32(tail.length - 4, true) !== 0x31524150) return Effect.fail(invalid(key, "no PAR1 magic at the end"))
  return Effect.succeed(view.getUint32(tail.length - 8, true))
}

/**
 * The `num_rows` of a part's footer, read with hyparquet. The part is streamed (never held whole): the first read
 * keeps its last `tailBytes`, which hold the footer unless the part has very many row groups or columns — then a
 * second read keeps exactly the footer.
 */
export const parquetRowCounter =
  (tailBytes: number) =>
  <E>(key: string, read: () => Stream.Stream<Uint8Array, E>): Effect.Effect<number, FormatError | E> =>
  Effect.gen(function* () {
    const first = yield* tailOf(read(), tailBytes)
    const length = yield* footerLength(key, first.tail)
    if (length + 12 > first.total) return yield* invalid(key, `footer length ${length} exceeds the file size ${first.total}`)
    const footer = length + 8 <= first.tail.length ? first.tail : yield* fromOffset(read(), first.total - length - 8)
    // Loaded here, not at the top: only validation reads Parquet, and `rivet run` need not load a reader.
    const { parquetMetadata } = yield* Effect.tryPromise({
      try: () => import("hyparquet"),
      catch: (cause) =>
        new FormatError({ format: "parquet", message: `cannot load the Parquet reader (hyparquet): ${describeCause(cause)}` })
    })
    const rows = yield* Effect.try({
      try: () => parquetMetadata(footer).num_rows,
      catch: (cause) => invalid(key, `its footer cannot be decoded (${describeCause(cause)})`)
    })
    return Number(rows)
  })

/** `parquetRowCounter` keeping the last MiB on the first read. */
export const countParquetRows = parquetRowCounter(TAIL_BYTES)
