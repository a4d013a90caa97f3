import { describe, expect, it, vi } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as fc from "fast-check"
import * as zlib from "node:zlib"
import csv from "../../../src/plugins/formats/csv/index.js"
import ndjson from "../../../src/plugins/formats/ndjson/index.js"
import { makeBatch } from "../../../src/core/batch.js"
import type { FormatPlugin } from "../../../src/core/plugin.js"
import { partOf, type Part } from "./roundtrip-arbitraries.js"
import { oracleCsv, oracleNdjson } from "./text-oracle.js"
import { allTypesBatch, allTypesSchema, encodePart, loadDriver } from "./text-support.js"

/**
 * The CSV and NDJSON encoders render from column buffers into bytes; the value-by-value string renderers they
 * replaced (test/plugins/formats/text-oracle.ts) are the oracle: over random rows of every logical type, split over
 * random batches, both must give the same bytes.
 */

const RUNS = Number(process.env.PROPERTY_RUNS ?? 200)

const encode = <C, I>(plugin: FormatPlugin<C, I>, block: unknown, input: Part): Promise<Buffer> =>
  Effect.runPromise(
    Effect.map(
      Effect.flatMap(loadDriver(plugin, block), (driver) => encodePart(driver, input.schema, input.batches)),
      ({ bytes }) => bytes
    )
  )

const part = partOf(1000)

describe("text encoders are byte-identical to the old value renderers", () => {
  it("CSV, plain and gzip", async () => {
    await fc.assert(
      fc.asyncProperty(part, fc.constantFrom("none", "gzip"), async (input, compression) => {
        const bytes = await encode(csv, { compression }, input)
        const plain = compression === "gzip" ? zlib.gunzipSync(bytes) : bytes
        expect(plain.toString("utf8")).toBe(oracleCsv(input.schema, input.batches))
        expect(plain.equals(Buffer.from(oracleCsv(input.schema, input.batches), "utf8"))).toBe(true)
      }),
      { numRuns: RUNS }
    )
  })

  it("NDJSON, plain and gzip", async () => {
    await fc.assert(
      fc.asyncProperty(part, fc.constantFrom("none", "gzip"), async (input, compression) => {
        const bytes = await encode(ndjson, { compression }, input)
        const plain = compression === "gzip" ? zlib.gunzipSync(bytes) : bytes
        expect(plain.equals(Buffer.from(oracleNdjson(input.schema, input.batches), "utf8"))).toBe(true)
      }),
      { numRuns: RUNS }
    )
  })

  it("the oracle itself writes the pinned all-types rows (so the comparison can fail)", async () => {
    const input = { schema: allTypesSchema, rows: [], batches: [allTypesBatch()] }
    const csvText = oracleCsv(input.schema, input.batches)
    expect(csvText).toContain('"q "" c , n \n r \r rn \r\n é 日本 🎉  sp "')
    expect((await encode(csv, {}, input)).toString("utf8")).toBe(csvText)
    expect((await encode(ndjson, {}, input)).toString("utf8")).toBe(oracleNdjson(input.schema, input.batches))
  })
})

describe("text columns reach the output as bytes", () => {
  it("no TextDecoder call and no Buffer#toString while encoding 20 000 strings to CSV and NDJSON", async () => {
    const schema = { columns: [{ name: "s", type: { kind: "string" } }, { name: "j", type: { kind: "json" } }] } as const
    const values = Array.from({ length: 20_000 }, (_, i) => `name, "${i}" é`)
    const docs = values.map((_, i) => `{"k": ${i}}`)
    const input = { schema, rows: [], batches: [makeBatch(schema, [values, docs])] }
    const decode = vi.spyOn(TextDecoder.prototype, "decode")
    const toString = vi.spyOn(Buffer.prototype, "toString")
    try {
      const csvBytes = await encode(csv, {}, input)
      const ndjsonBytes = await encode(ndjson, {}, input)
      expect(decode).not.toHaveBeenCalled()
      expect(toString).not.toHaveBeenCalled()
      expect(csvBytes.length).toBeGreaterThan(20_000 * 20)
      expect(ndjsonBytes.length).toBeGreaterThan(20_000 * 30)
    } finally {
      decode.mockRestore()
      toString.mockRestore()
    }
  })
})
