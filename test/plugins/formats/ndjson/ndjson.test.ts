import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as zlib from "node:zlib"
import ndjson from "../../../../src/plugins/formats/ndjson/index.js"
import { type BatchSchema, makeBatch } from "../../../../src/core/batch.js"
import { allTypesBatch, allTypesSchema, encodePart, isSingleGzipMember, loadDriver, TRICKY } from "../text-support.js"

const driver = (block: unknown = {}) => loadDriver(ndjson, block)

const FIRST_LINE =
  '{"i16":1,"i32":100000,"i64":"9007199254740993","f32":1.5,"f64":0.1,"dec":"-12.30","s":"hello","b":true,' +
  '"d":"2024-01-24","t":"12:34:56.789012","ts":"2024-01-24T03:33:20.123456","tstz":"2024-01-24T03:33:20.123456Z",' +
  '"u":"0e3b2a1c-8d6f-4c2e-9b1a-5f7d3c9e2b10","j":{"a": 1},"by":"dead","iv":"P1Y2M3DT4H5M6.5S","li":[1,null,3],' +
  '"ls":["a","b\\"c"]}\n'

const lines = (bytes: Buffer) => {
  const text = bytes.toString("utf8")
  expect(text.endsWith("\n") || text === "").toBe(true)
  return text.split("\n").slice(0, -1)
}

describe("ndjson format", () => {
  it.effect("writes one object per line with exact text for every logical type", () =>
    Effect.gen(function* () {
      const { bytes } = yield* encodePart(yield* driver(), allTypesSchema, [allTypesBatch(0, 1)])
      expect(bytes.toString("utf8")).toBe(FIRST_LINE)
    })
  )

  it.effect("parses back line by line: keys in schema order, NULL as null, lossless values", () =>
    Effect.gen(function* () {
      const { bytes } = yield* encodePart(yield* driver(), allTypesSchema, [allTypesBatch()])
      const rows = lines(bytes).map((line) => JSON.parse(line) as Record<string, unknown>)
      expect(rows).toHaveLength(4)
      for (const row of rows) expect(Object.keys(row)).toEqual(allTypesSchema.columns.map((column) => column.name))
      expect(Object.values(rows[1]!).every((value) => value === null)).toBe(true)
      expect(rows[2]).toMatchObject({
        i64: "-9223372036854775808",
        f32: "NaN",
        f64: -0,
        s: "",
        d: "0001-01-01",
        ts: "0001-01-01T00:00:00.000000",
        tstz: "9999-12-31T23:59:59.999999Z",
        j: [],
        by: "",
        li: [],
        ls: []
      })
      expect(Object.is(rows[2]!.f64, -0)).toBe(true)
      expect(rows[3]).toMatchObject({
        i64: "9223372036854775807",
        f32: "Infinity",
        f64: "-Infinity",
        s: TRICKY,
        t: "24:00:00.000000",
        ts: "1969-12-31T23:59:59.999999",
        j: { x: "a,b" },
        by: "0001feff",
        li: [null],
        ls: ["", null, "x,y"]
      })
    })
  )

  it.effect("keeps a pretty-printed JSON value on its line, with big numbers untouched", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = { columns: [{ name: "doc", type: { kind: "json" } }] }
      const doc = '{\r\n  "big": 123456789012345678901234567890,\n  "s": "line\\nbreak"\n}'
      const { bytes } = yield* encodePart(yield* driver(), schema, [makeBatch(schema, [[doc, "null", "7"]])])
      const [first, second, third, ...rest] = lines(bytes)
      expect(rest).toEqual([])
      expect(first).toContain("123456789012345678901234567890")
      expect(JSON.parse(first!)).toEqual({ doc: { big: Number("123456789012345678901234567890"), s: "line\nbreak" } })
      expect(second).toBe('{"doc":null}')
      expect(third).toBe('{"doc":7}')
    })
  )

  it.effect("escapes column names and writes {} rows when there are no columns", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = { columns: [{ name: 'we"ird\nname', type: { kind: "int16" } }] }
      const named = yield* encodePart(yield* driver(), schema, [makeBatch(schema, [[5]])])
      expect(named.bytes.toString("utf8")).toBe('{"we\\"ird\\nname":5}\n')
      const empty: BatchSchema = { columns: [] }
      const encoder = yield* (yield* driver()).open(empty)
      const out = yield* encoder.write({ schema: empty, columns: [], rowCount: 2 })
      expect(Buffer.concat(out).toString("utf8")).toBe("{}\n{}\n")
    })
  )

  it.effect("several batches append lines; a part without rows is empty", () =>
    Effect.gen(function* () {
      const d = yield* driver()
      const whole = (yield* encodePart(d, allTypesSchema, [allTypesBatch()])).bytes
      const batches = [allTypesBatch(0, 2), allTypesBatch(2, 2), allTypesBatch(2, 4)]
      const split = yield* encodePart(d, allTypesSchema, batches)
      expect(split.bytes.equals(whole)).toBe(true)
      expect(split.perCall[1]).toBe(0)
      expect((yield* encodePart(d, allTypesSchema, [])).bytes.length).toBe(0)
      expect((yield* encodePart(d, allTypesSchema, [allTypesBatch(0, 0)])).bytes.length).toBe(0)
    })
  )

  it.effect("gzip: one member per part that decompresses to the plain output; empty part is a valid empty gzip", () =>
    Effect.gen(function* () {
      const gz = yield* driver({ compression: "gzip" })
      expect([gz.extension, gz.contentType, gz.compression]).toEqual(["ndjson.gz", "application/x-ndjson", "gzip"])
      const plain = yield* driver()
      expect([plain.extension, plain.contentType, plain.compression]).toEqual([
        "ndjson",
        "application/x-ndjson",
        "none"
      ])
      const batches = [allTypesBatch(0, 3), allTypesBatch(1, 4)]
      const expected = (yield* encodePart(plain, allTypesSchema, batches)).bytes
      const { bytes } = yield* encodePart(gz, allTypesSchema, batches)
      expect(zlib.gunzipSync(bytes).equals(expected)).toBe(true)
      expect(isSingleGzipMember(bytes, expected)).toBe(true)
      const empty = (yield* encodePart(gz, allTypesSchema, [])).bytes
      expect(empty.length).toBeGreaterThan(0)
      expect(zlib.gunzipSync(empty).length).toBe(0)
    })
  )

  it.effect("rejects duplicate column names and compression other than none or gzip", () =>
    Effect.gen(function* () {
      const d = yield* driver()
      const dup: BatchSchema = {
        columns: [
          { name: "id", type: { kind: "int32" } },
          { name: "id", type: { kind: "int64" } }
        ]
      }
      const error = yield* Effect.flip(d.validate(dup))
      expect(error).toMatchObject({ _tag: "FormatError", format: "ndjson" })
      expect(error.message).toContain('"id" appears more than once')
      const decode = Schema.decodeUnknownEither(ndjson.config, { onExcessProperty: "error" })
      const zstd = decode({ compression: "zstd" })
      expect(Either.isLeft(zstd) && ParseResult.TreeFormatter.formatErrorSync(zstd.left)).toContain(
        'NDJSON output supports compression none or gzip, not "zstd"'
      )
      expect(decode({ compression: "gzip" })).toEqual(Either.right({ compression: "gzip" }))
    })
  )

  it.effect("fails with a FormatError naming the column when a value has the wrong representation", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = { columns: [{ name: "at", type: { kind: "timestamp" } }] }
      expect(() => makeBatch(schema, [[0n, new Uint8Array([1])]])).toThrow(
        'column "at" (timestamp), row 2: expected a bigint, got bytes'
      )
      const other: BatchSchema = { columns: [{ name: "n", type: { kind: "int32" } }, { name: "m", type: { kind: "int32" } }] }
      const encoder = yield* (yield* driver()).open(schema)
      const wrongWidth = yield* Effect.flip(encoder.write(makeBatch(other, [[1], [2]])))
      expect(wrongWidth.message).toContain("2 columns")
    })
  )
})
