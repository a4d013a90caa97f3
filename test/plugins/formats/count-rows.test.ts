import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { gzipSync } from "node:zlib"
import csv from "../../../src/plugins/formats/csv/index.js"
import parquet from "../../../src/plugins/formats/parquet/index.js"
import { parquetRowCounter } from "../../../src/plugins/formats/parquet/count-rows.js"
import { countTextRows, csvRowCounter, ndjsonRowCounter } from "../../../src/plugins/formats/text/count-rows.js"
import { makeBatch, type Value } from "../../../src/core/batch.js"
import type { FormatPlugin } from "../../../src/core/plugin.js"
import { FormatDriver } from "../../../src/core/plugin.js"
import { allTypesRows, allTypesSchema, encodeAll } from "./parquet/fixtures.js"

const text = (value: string) => new TextEncoder().encode(value)

/** The bytes as a stream of `size`-byte chunks (so quotes and line feeds fall on chunk borders), counting reads. */
const chunked = (bytes: Uint8Array, size: number) => {
  let reads = 0
  const read = () =>
    Stream.suspend(() => {
      reads++
      const chunks: Array<Uint8Array> = []
      for (let offset = 0; offset < bytes.length; offset += size) chunks.push(bytes.subarray(offset, offset + size))
      return Stream.fromChunk(Chunk.fromIterable(chunks))
    })
  return { read, reads: () => reads }
}

const countCsv = countTextRows("csv", csvRowCounter)
const countNdjson = countTextRows("ndjson", ndjsonRowCounter)

const driverOf = (plugin: FormatPlugin, input: Record<string, unknown>) =>
  Effect.gen(function* () {
    const config = yield* Schema.decodeUnknown(plugin.config)(input)
    return yield* Effect.provide(FormatDriver, plugin.make(config as never, { configDir: ".", env: {} }))
  }).pipe(Effect.orDie)

describe("row counters for rivet validate", () => {
  it.effect("CSV: quoted line feeds, doubled quotes and NULL-only rows, across any chunk size", () =>
    Effect.gen(function* () {
      const body = 'a,b\n1,"two\nlines"\n2,"say ""hi""\n"\n\n3,x'
      for (const size of [1, 2, 3, 7, 1000]) {
        expect(yield* countCsv("p.csv", chunked(text(body), size).read), `chunk ${size}`).toBe(4)
      }
      expect(yield* countCsv("p.csv", chunked(text("a,b\n"), 4).read)).toBe(0)
      expect(yield* countCsv("p.csv", chunked(text(""), 4).read)).toBe(0)
      expect(yield* countCsv("p.csv", chunked(text("a\r\n1\r\n2\r\n"), 3).read)).toBe(2)
    })
  )

  it.effect("CSV written by the csv format, plain and gzip, counts what was encoded", () =>
    Effect.gen(function* () {
      const schema = { columns: [{ name: "v", type: { kind: "string" as const } }] }
      const values: Array<Value> = ["plain", "with,comma", 'with "quote"', "multi\nline\r\nvalue", null, ""]
      for (const compression of ["none", "gzip"]) {
        const driver = yield* driverOf(csv as FormatPlugin, { compression })
        const encoder = yield* driver.open(schema)
        const written = yield* encoder.write(makeBatch(schema, [values]))
        const bytes = Buffer.concat([...written, ...(yield* encoder.finish)])
        const key = `p.${driver.extension}`
        expect(yield* driver.countRows!(key, chunked(bytes, 5).read), compression).toBe(values.length)
      }
    })
  )

  it.effect("NDJSON counts non-empty lines; gzip parts are gunzipped, a broken gzip is a FormatError", () =>
    Effect.gen(function* () {
      const body = '{"a":1}\n{"a":"x\\ny"}\n\n  \n{"a":3}'
      expect(yield* countNdjson("p.ndjson", chunked(text(body), 2).read)).toBe(3)
      const zipped = gzipSync(text(`${body}\n`))
      expect(yield* countNdjson("p.ndjson.gz", chunked(zipped, 3).read)).toBe(3)
      const broken = yield* Effect.exit(countNdjson("p.ndjson.gz", chunked(zipped.subarray(0, zipped.length - 6), 3).read))
      expect(Exit.isFailure(broken) && JSON.stringify(broken.cause)).toContain("not a valid gzip stream")
    })
  )

  it.effect("Parquet: num_rows from the footer; a footer beyond the kept tail is fetched by a second read", () =>
    Effect.gen(function* () {
      const driver = yield* driverOf(parquet as FormatPlugin, { row_group_size: 2 })
      const encoder = yield* driver.open(allTypesSchema)
      const { writes, finish } = yield* encodeAll(encoder, allTypesSchema, allTypesRows, [allTypesRows.length])
      const bytes = Buffer.concat([...writes.flat(), ...finish])
      const whole = chunked(bytes, 4096)
      expect(yield* driver.countRows!("p.parquet", whole.read)).toBe(allTypesRows.length)
      expect(whole.reads()).toBe(1)
      const small = chunked(bytes, 100)
      expect(yield* parquetRowCounter(64)("p.parquet", small.read)).toBe(allTypesRows.length)
      expect(small.reads()).toBe(2)
      const truncated = yield* Effect.exit(driver.countRows!("p.parquet", chunked(bytes.subarray(0, bytes.length - 1), 64).read))
      expect(Exit.isFailure(truncated) && JSON.stringify(truncated.cause)).toContain("no PAR1 magic")
    })
  )
})
