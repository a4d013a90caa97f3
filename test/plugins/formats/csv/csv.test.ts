import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as zlib from "node:zlib"
import { stringify } from "csv-stringify/sync"
import csv from "../../../../src/plugins/formats/csv/index.js"
import { type BatchSchema, type LogicalType, makeBatch } from "../../../../src/core/batch.js"
import { parseCsv } from "../csv-reader.js"
import { allTypesBatch, allTypesSchema, encodePart, isSingleGzipMember, loadDriver } from "../text-support.js"

const HEADER = "i16,i32,i64,f32,f64,dec,s,b,d,t,ts,tstz,u,j,by,iv,li,ls\n"
const ROWS = [
  '1,100000,9007199254740993,1.5,0.1,-12.30,hello,true,2024-01-24,12:34:56.789012,2024-01-24T03:33:20.123456,' +
    '2024-01-24T03:33:20.123456Z,0e3b2a1c-8d6f-4c2e-9b1a-5f7d3c9e2b10,"{""a"": 1}",dead,P1Y2M3DT4H5M6.5S,' +
    '"[1,null,3]","[""a"",""b\\""c""]"\n',
  ",,,,,,,,,,,,,,,,,\n",
  '-32768,-2147483648,-9223372036854775808,NaN,-0,0.00,"",false,0001-01-01,00:00:00.000000,' +
    "0001-01-01T00:00:00.000000,9999-12-31T23:59:59.999999Z,00000000-0000-0000-0000-000000000000,[]," +
    '"",PT0S,[],[]\n',
  '32767,2147483647,9223372036854775807,Infinity,-Infinity,99999999.99,"q "" c , n \n r \r rn \r\n é 日本 🎉  sp ",' +
    "true,1969-12-31,24:00:00.000000,1969-12-31T23:59:59.999999,1969-12-31T23:59:59.999999Z," +
    'ffffffff-ffff-ffff-ffff-ffffffffffff,"{\n ""x"": ""a,b""\n}",0001feff,-P1D,[null],"["""",null,""x,y""]"\n'
]

const driver = (block: unknown = {}) => loadDriver(csv, block)

describe("csv format", () => {
  it.effect("writes every logical type, NULLs and awkward text exactly", () =>
    Effect.gen(function* () {
      const { bytes } = yield* encodePart(yield* driver(), allTypesSchema, [allTypesBatch()])
      expect(bytes.toString("utf8")).toBe(HEADER + ROWS.join(""))
    })
  )

  it.effect("reads back with an RFC 4180 parser: NULL and empty string stay distinct", () =>
    Effect.gen(function* () {
      const { bytes } = yield* encodePart(yield* driver(), allTypesSchema, [allTypesBatch()])
      const [header, ...rows] = parseCsv(bytes.toString("utf8"))
      expect(header).toEqual(allTypesSchema.columns.map((column) => column.name))
      expect(rows).toHaveLength(4)
      expect(rows[1]).toEqual(Array.from({ length: 18 }, () => null))
      expect(rows[2]![6]).toBe("")
      expect(rows[2]![14]).toBe("")
      expect(rows[3]![6]).toBe('q " c , n \n r \r rn \r\n é 日本 🎉  sp ')
      expect(JSON.parse(rows[3]![13]!)).toEqual({ x: "a,b" })
      expect(JSON.parse(rows[3]![17]!)).toEqual(["", null, "x,y"])
      expect(JSON.parse(rows[0]![17]!)).toEqual(["a", 'b"c'])
    })
  )

  it.effect("round-trips random strings made of quotes, commas, line breaks and spaces", () =>
    Effect.gen(function* () {
      const alphabet = ['"', ",", "\n", "\r", " ", "a", "é", "🎉", "'", "\t"]
      let seed = 7
      const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648
      const values = Array.from({ length: 2000 }, (_, i) =>
        i % 10 === 0
          ? null
          : Array.from({ length: Math.floor(next() * 8) }, () => alphabet[Math.floor(next() * 10)]).join("")
      )
      const schema: BatchSchema = {
        columns: [
          { name: "n", type: { kind: "int32" } },
          { name: "v", type: { kind: "string" } }
        ]
      }
      const batch = makeBatch(schema, [values.map((_, i) => i), values])
      const { bytes } = yield* encodePart(yield* driver(), schema, [batch])
      const rows = parseCsv(bytes.toString("utf8")).slice(1)
      expect(rows.map((row) => row[1])).toEqual(values)
    })
  )

  it.effect("quotes fields exactly as csv-stringify does (RFC 4180, empty string quoted)", () =>
    Effect.gen(function* () {
      const alphabet = ['"', ",", "\n", "\r", " ", "a", "é", "🎉", "'", "\t", '""']
      let seed = 11
      const next = () => (seed = (seed * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648
      const values = Array.from({ length: 2000 }, () =>
        Array.from({ length: Math.floor(next() * 8) }, () => alphabet[Math.floor(next() * alphabet.length)]).join("")
      )
      const schema: BatchSchema = { columns: [{ name: "v", type: { kind: "string" } }] }
      const { bytes } = yield* encodePart(yield* driver(), schema, [makeBatch(schema, [values])])
      const expected = stringify(
        values.map((value) => [value]),
        { header: true, columns: ["v"], quoted_match: /^$/, quote_record_delimiter: true }
      )
      expect(bytes.toString("utf8")).toBe(expected)
    })
  )

  it.effect("quotes column names that need it", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = {
        columns: [
          { name: "plain", type: { kind: "int32" } },
          { name: "with,comma", type: { kind: "int32" } },
          { name: 'say "x"', type: { kind: "int32" } },
          { name: "", type: { kind: "int32" } }
        ]
      }
      const { bytes } = yield* encodePart(yield* driver(), schema, [])
      expect(bytes.toString("utf8")).toBe('plain,"with,comma","say ""x""",""\n')
    })
  )

  it.effect("writes one header for several batches and a header-only part without rows", () =>
    Effect.gen(function* () {
      const d = yield* driver()
      const batches = [allTypesBatch(0, 1), allTypesBatch(1, 1), allTypesBatch(1, 4)]
      const several = yield* encodePart(d, allTypesSchema, batches)
      expect(several.bytes.toString("utf8")).toBe(HEADER + ROWS.join(""))
      const rest = Buffer.byteLength(ROWS.slice(1).join(""))
      expect(several.perCall).toEqual([Buffer.byteLength(HEADER + ROWS[0]!), 0, rest, 0])
      const empty = yield* encodePart(d, allTypesSchema, [])
      expect(empty.bytes.toString("utf8")).toBe(HEADER)
      const emptyBatch = yield* encodePart(d, allTypesSchema, [allTypesBatch(0, 0)])
      expect(emptyBatch.bytes.toString("utf8")).toBe(HEADER)
    })
  )

  it.effect("describes itself: extension, content type, compression label", () =>
    Effect.gen(function* () {
      const plain = yield* driver()
      expect([plain.extension, plain.contentType, plain.compression]).toEqual([
        "csv",
        "text/csv; charset=utf-8",
        "none"
      ])
      const gz = yield* driver({ compression: "gzip" })
      expect([gz.extension, gz.contentType, gz.compression]).toEqual(["csv.gz", "text/csv; charset=utf-8", "gzip"])
    })
  )

  it.effect("gzip: one gzip member per part that decompresses to the plain output", () =>
    Effect.gen(function* () {
      const batches = [allTypesBatch(0, 2), allTypesBatch(2, 4), allTypesBatch(0, 4)]
      const plain = (yield* encodePart(yield* driver(), allTypesSchema, batches)).bytes
      const { bytes } = yield* encodePart(yield* driver({ compression: "gzip" }), allTypesSchema, batches)
      expect(zlib.gunzipSync(bytes).equals(plain)).toBe(true)
      expect(isSingleGzipMember(bytes, plain)).toBe(true)
      const headerOnly = (yield* encodePart(yield* driver({ compression: "gzip" }), allTypesSchema, [])).bytes
      expect(zlib.gunzipSync(headerOnly).toString("utf8")).toBe(HEADER)
    })
  )

  it.effect("gzip: streams compressed bytes out before the part ends", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = { columns: [{ name: "h", type: { kind: "bytes" } }] }
      let seed = 1
      const noise = () => Uint8Array.from({ length: 64 }, () => (seed = (seed * 48_271) % 2_147_483_647) & 0xff)
      const batch = makeBatch(schema, [Array.from({ length: 20_000 }, noise)])
      const { bytes, perCall } = yield* encodePart(yield* driver({ compression: "gzip" }), schema, [batch, batch])
      expect(perCall[0]).toBeGreaterThan(1_000_000)
      expect(zlib.gunzipSync(bytes).toString("utf8").split("\n")).toHaveLength(40_002)
    })
  )

  it("rejects compression other than none or gzip, and unknown keys", () => {
    const decode = Schema.decodeUnknownEither(csv.config, { onExcessProperty: "error" })
    const zstd = decode({ compression: "zstd" })
    expect(Either.isLeft(zstd) && ParseResult.TreeFormatter.formatErrorSync(zstd.left)).toContain(
      'CSV output supports compression none or gzip, not "zstd"'
    )
    expect(Either.isLeft(decode({ delimiter: ";" }))).toBe(true)
    expect(decode({})).toEqual(Either.right({ compression: "none" }))
  })

  it.effect("validate rejects a schema without columns or with a type outside the contract", () =>
    Effect.gen(function* () {
      const d = yield* driver()
      const none = yield* Effect.flip(d.validate({ columns: [] }))
      expect(none.message).toBe("CSV needs at least one column")
      const odd = { kind: "money" } as unknown as LogicalType
      const unknown = yield* Effect.flip(d.validate({ columns: [{ name: "m", type: odd }] }))
      expect(unknown).toMatchObject({ _tag: "FormatError", format: "csv" })
      expect(unknown.message).toContain('column "m" of type money')
      yield* d.validate(allTypesSchema)
    })
  )

  it.effect("fails with a FormatError naming the column when a value has the wrong representation", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = {
        columns: [
          { name: "ok", type: { kind: "int32" } },
          { name: "blob", type: { kind: "bytes" } }
        ]
      }
      const encoder = yield* (yield* driver()).open(schema)
      expect(() => makeBatch(schema, [[1, 2], [null, 42]])).toThrow(
        'column "blob" (bytes), row 2: expected bytes (Uint8Array), got number 42'
      )
      const wrongWidth = yield* Effect.flip(encoder.write(allTypesBatch()))
      expect(wrongWidth.message).toContain("18 columns")
    })
  )
})
