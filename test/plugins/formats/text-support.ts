import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as zlib from "node:zlib"
import { type Batch, type BatchSchema, makeBatch, type Value } from "../../../src/core/batch.js"
import type { FormatError } from "../../../src/core/errors.js"
import { FormatDriver, type FormatDriverShape, type FormatPlugin } from "../../../src/core/plugin.js"

/** Decodes a format block as the runtime does (unknown keys rejected) and builds the driver. */
export const loadDriver = <C, I>(plugin: FormatPlugin<C, I>, block: unknown) =>
  Effect.gen(function* () {
    const config = yield* Schema.decodeUnknown(plugin.config, { onExcessProperty: "error" })(block)
    return yield* Effect.provide(FormatDriver, plugin.make(config, { configDir: ".", env: {} }))
  })

/** Encodes one part and returns its bytes, plus the chunks each call returned. */
export const encodePart = (
  driver: FormatDriverShape,
  schema: BatchSchema,
  batches: ReadonlyArray<Batch>
): Effect.Effect<{ readonly bytes: Buffer; readonly perCall: ReadonlyArray<number> }, FormatError> =>
  Effect.gen(function* () {
    yield* driver.validate(schema)
    const encoder = yield* driver.open(schema)
    const chunks: Array<Uint8Array> = []
    const perCall: Array<number> = []
    for (const batch of batches) {
      const out = yield* encoder.write(batch)
      perCall.push(out.reduce((n, chunk) => n + chunk.byteLength, 0))
      chunks.push(...out)
    }
    const tail = yield* encoder.finish
    perCall.push(tail.reduce((n, chunk) => n + chunk.byteLength, 0))
    chunks.push(...tail)
    return { bytes: Buffer.concat(chunks), perCall }
  })

/**
 * Checks that `gz` is exactly one gzip member holding all of `content`: the trailer of the last member carries
 * the CRC32 and length of the whole content only if there is no earlier member.
 */
export const isSingleGzipMember = (gz: Buffer, content: Buffer): boolean =>
  gz[0] === 0x1f &&
  gz[1] === 0x8b &&
  gz.readUInt32LE(gz.length - 8) === zlib.crc32(content) &&
  gz.readUInt32LE(gz.length - 4) === content.length % 2 ** 32

/** Every logical type, with NULLs, extremes and awkward text. */
export const allTypesSchema: BatchSchema = {
  columns: [
    { name: "i16", type: { kind: "int16" } },
    { name: "i32", type: { kind: "int32" } },
    { name: "i64", type: { kind: "int64" } },
    { name: "f32", type: { kind: "float32" } },
    { name: "f64", type: { kind: "float64" } },
    { name: "dec", type: { kind: "decimal", precision: 12, scale: 2 } },
    { name: "s", type: { kind: "string" } },
    { name: "b", type: { kind: "bool" } },
    { name: "d", type: { kind: "date" } },
    { name: "t", type: { kind: "time" } },
    { name: "ts", type: { kind: "timestamp" } },
    { name: "tstz", type: { kind: "timestamptz" } },
    { name: "u", type: { kind: "uuid" } },
    { name: "j", type: { kind: "json" } },
    { name: "by", type: { kind: "bytes" } },
    { name: "iv", type: { kind: "interval" } },
    { name: "li", type: { kind: "list", element: { kind: "int32" } } },
    { name: "ls", type: { kind: "list", element: { kind: "string" } } }
  ]
}

export const TRICKY = 'q " c , n \n r \r rn \r\n é 日本 🎉  sp '

const rows: ReadonlyArray<ReadonlyArray<Value>> = [
  [
    1,
    100000,
    9007199254740993n,
    1.5,
    0.1,
    "-12.30",
    "hello",
    true,
    19746,
    45296789012n,
    1706067200123456n,
    1706067200123456n,
    "0e3b2a1c-8d6f-4c2e-9b1a-5f7d3c9e2b10",
    '{"a": 1}',
    new Uint8Array([0xde, 0xad]),
    "P1Y2M3DT4H5M6.5S",
    [1, null, 3],
    ["a", 'b"c']
  ],
  Array.from({ length: 18 }, () => null),
  [
    -32768,
    -2147483648,
    -9223372036854775808n,
    Number.NaN,
    -0,
    "0.00",
    "",
    false,
    -719162,
    0n,
    -62135596800000000n,
    253402300799999999n,
    "00000000-0000-0000-0000-000000000000",
    "[]",
    new Uint8Array(),
    "PT0S",
    [],
    []
  ],
  [
    32767,
    2147483647,
    9223372036854775807n,
    Infinity,
    -Infinity,
    "99999999.99",
    TRICKY,
    true,
    -1,
    86400000000n,
    -1n,
    -1n,
    "ffffffff-ffff-ffff-ffff-ffffffffffff",
    '{\n "x": "a,b"\n}',
    new Uint8Array([0, 1, 254, 255]),
    "-P1D",
    [null],
    ["", null, "x,y"]
  ]
]

/** The rows above as a columnar batch (optionally only some of them). */
export const allTypesBatch = (from = 0, to = rows.length): Batch =>
  makeBatch(
    allTypesSchema,
    allTypesSchema.columns.map((_, c) => rows.slice(from, to).map((row) => row[c]!))
  )
