import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, describe, expect, it, vi } from "vitest"
import { batchFromColumns, batchToRows, type BatchSchema, type LogicalType } from "../../../../src/core/batch.js"
import type { ColumnData } from "../../../../src/core/columns/data.js"
import { BinaryCopyDecoder, TruncatedCopy } from "../../../../src/plugins/sources/postgres/binary-copy.js"
import { fieldReader } from "../../../../src/plugins/sources/postgres/binary-fields.js"
import { startCopyOut } from "../../../../src/plugins/sources/postgres/copy-stream.js"
import { openSession } from "../../../../src/plugins/sources/postgres/session.js"
import { copyStatement, quoteEscapedLiteral } from "../../../../src/plugins/sources/postgres/statement.js"
import { planColumn, type Shape } from "../../../../src/plugins/sources/postgres/types.js"
import { testPgUrl } from "../../../support/pg.js"

// The binary tuple decoder at the byte level: COPY bytes from the real server, fed back cut at every position.
const pool = postgres(testPgUrl(), { max: 2, fetch_types: false, prepare: false, onnotice: () => {} })
afterAll(() => pool.end({ timeout: 0 }))
const context = { displayUrl: "postgres://postgres@127.0.0.1/test", scrub: (text: string) => text, exportName: "bytes" }
const settings = { statementTimeoutMs: 0, lockTimeoutMs: 0, schema: "public" }

/** The raw CopyData payloads of `COPY (<select>) TO STDOUT (FORMAT binary)`. */
const copyBytes = (select: string): Promise<Array<Uint8Array>> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* openSession(pool, settings, context)
        const chunks: Array<Uint8Array> = []
        const copy = startCopyOut(sql, copyStatement(select, []), (bytes, start, end) => chunks.push(bytes.slice(start, end)))
        yield* Effect.promise(() => copy.done)
        return chunks
      })
    )
  )

const scalar = (oid: number, name: string): Shape => ({ kind: "scalar", base: "string", typmod: -1, name, oid, isEnum: false })
const text = planColumn("t", scalar(25, "text"), undefined)
const int8 = planColumn("i", { kind: "scalar", base: "int64", typmod: -1, name: "int8", oid: 20, isEnum: false }, undefined)
const plans = [text, int8].map((planned) => ("plan" in planned ? planned.plan : undefined)!)
const schema: BatchSchema = { columns: plans.map((plan) => ({ name: plan.name, type: plan.type as LogicalType })) }

const decodeAll = (chunks: ReadonlyArray<Uint8Array>, batchRows = 1000, batchBytes?: number) => {
  const batches: Array<Array<ColumnData>> = []
  const decoder = new BinaryCopyDecoder({
    sinks: (capacity) => plans.map((plan) => fieldReader(plan).make(capacity)),
    batchRows,
    ...(batchBytes === undefined ? {} : { batchBytes }),
    onBatch: (columns) => batches.push(columns)
  })
  for (const chunk of chunks) decoder.push(chunk)
  const last = decoder.end()
  if (last.length > 0) batches.push(last)
  return batches.map((columns) => batchToRows(batchFromColumns(schema, columns))).flat()
}

/** The columns of the one batch that `chunks` (fewer than 10 000 rows) decode into, fed as they came. */
const lastBatch = (chunks: ReadonlyArray<Uint8Array>) => {
  const decoder = new BinaryCopyDecoder({
    sinks: (capacity) => plans.map((plan) => fieldReader(plan).make(capacity)),
    batchRows: 10_000,
    onBatch: () => {}
  })
  for (const chunk of chunks) decoder.push(chunk)
  return decoder.end()
}

const SELECT = `SELECT t, i FROM (VALUES (E'h\\u00e9llo \\u65e5\\u672c', (-9223372036854775808)::int8), (NULL, NULL), ('', 0::int8),
  (E'\\U0001F389\\U0001F389', NULL), (NULL, 9223372036854775807::int8), (repeat(E'\\u00e9', 3000), 42::int8)) AS v(t, i)`

const EXPECTED = [
  { t: "héllo 日本", i: -9223372036854775808n },
  { t: null, i: null },
  { t: "", i: 0n },
  { t: "🎉🎉", i: null },
  { t: null, i: 9223372036854775807n },
  { t: "é".repeat(3000), i: 42n }
]

describe("binary COPY decoder", () => {
  it("decodes the server's bytes fed as they came, and cut at every byte (multibyte UTF-8 and fields split)", async () => {
    const chunks = await copyBytes(SELECT)
    expect(decodeAll(chunks)).toEqual(EXPECTED)
    const all = Buffer.concat(chunks)
    // One buffer cut in two at every position, then in 1-byte and 7-byte pieces.
    for (let cut = 0; cut <= all.length; cut += cut < 200 ? 1 : 97) {
      expect(decodeAll([all.subarray(0, cut), all.subarray(cut)]), `cut at ${cut}`).toEqual(EXPECTED)
    }
    const pieces = (size: number) => Array.from({ length: Math.ceil(all.length / size) }, (_, i) => all.subarray(i * size, (i + 1) * size))
    expect(decodeAll(pieces(1))).toEqual(EXPECTED)
    expect(decodeAll(pieces(7))).toEqual(EXPECTED)
  })

  it("cuts batches at the row cap or the byte cap, whichever comes first", async () => {
    const chunks = await copyBytes("SELECT repeat('x', 1000), i::int8 FROM generate_series(1, 100) AS i")
    const sizes = (batchRows: number, batchBytes?: number, pieces: ReadonlyArray<Uint8Array> = chunks) => {
      const counts: Array<number> = []
      const decoder = new BinaryCopyDecoder({
        sinks: (capacity) => plans.map((plan) => fieldReader(plan).make(capacity)),
        batchRows,
        ...(batchBytes === undefined ? {} : { batchBytes }),
        onBatch: (columns) => counts.push(columns[0]!.length)
      })
      for (const chunk of pieces) decoder.push(chunk)
      counts.push(decoder.end()[0]?.length ?? 0)
      return counts
    }
    expect(sizes(30)).toEqual([30, 30, 30, 10])
    // A row is 2 + (4 + 1000) + (4 + 8) = 1018 wire bytes: 10 rows reach 10 000 bytes.
    const byBytes = [10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 0]
    expect(sizes(30, 10_000)).toEqual(byBytes)
    // Rows cut anywhere (inside a length, inside a value, several rows per piece) count the same bytes: a cap met
    // exactly by a row's last byte (10 × 1018 = 10 180) cuts after that row, one byte more after the next.
    const all = Buffer.concat(chunks)
    for (const size of [1, 3, 7, 1000, 1018, 4096, all.length]) {
      const pieces = Array.from({ length: Math.ceil(all.length / size) }, (_, i) => all.subarray(i * size, (i + 1) * size))
      expect(sizes(30, 10_000, pieces), `pieces of ${size} bytes`).toEqual(byBytes)
      expect(sizes(30, 10_180, pieces), `pieces of ${size} bytes, cap met exactly`).toEqual(byBytes)
      expect(sizes(30, 10_181, pieces), `pieces of ${size} bytes, cap missed by one`).toEqual([11, 11, 11, 11, 11, 11, 11, 11, 11, 1])
    }
  })

  it("rows that end on a full batch give no last batch and leave the sinks as the cut reset them, for the next statement", async () => {
    const chunks = await copyBytes("SELECT 'v' || i, i::int8 FROM generate_series(1, 30) AS i")
    const calls = { finish: 0, reset: 0 }
    const counted = (capacity: number) =>
      plans.map((plan) => {
        const sink = fieldReader(plan).make(capacity)
        const { finish, reset } = sink
        sink.finish = () => (calls.finish++, finish.call(sink))
        sink.reset = () => (calls.reset++, reset.call(sink))
        return sink
      })
    const sizes: Array<number> = []
    const decoder = new BinaryCopyDecoder({ sinks: counted, batchRows: 10, onBatch: (columns) => sizes.push(columns[0]!.length) })
    for (const chunk of chunks) decoder.push(chunk)
    expect(decoder.end()).toEqual([])
    expect(sizes).toEqual([10, 10, 10])
    // Two columns, three cuts: each finished and reset once per batch, never for the empty end.
    expect(calls).toEqual({ finish: 6, reset: 6 })
  })

  it("a stream without the trailer never reads as complete", async () => {
    const all = Buffer.concat(await copyBytes(SELECT))
    for (const end of [all.length - 2, all.length - 1, 30, 19, 5]) {
      const decoder = new BinaryCopyDecoder({
        sinks: (capacity) => plans.map((plan) => fieldReader(plan).make(capacity)),
        batchRows: 1000,
        onBatch: () => {}
      })
      decoder.push(all.subarray(0, end))
      expect(() => decoder.end(), `ended at ${end}`).toThrow(TruncatedCopy)
    }
  })

  it("rows fed a CopyData message each, as the server sends them, are decoded without a view per message", async () => {
    // Plain Uint8Arrays, so that every view goes through the spied method (Buffer has its own).
    const chunks = (await copyBytes("SELECT md5(i::text), i::int8 FROM generate_series(1, 2000) AS i")).map((chunk) => new Uint8Array(chunk))
    expect(chunks.length).toBeGreaterThanOrEqual(2000)
    const views = vi.spyOn(Uint8Array.prototype, "subarray")
    try {
      expect(lastBatch(chunks)[0]!.length).toBe(2000)
      // A few for the header and the trailer, not one per row: each would be garbage for the young generation.
      expect(views.mock.calls.length).toBeLessThan(10)
    } finally {
      views.mockRestore()
    }
  })

  it("text reaches the batch as bytes: no TextDecoder call and no Buffer toString while decoding", async () => {
    const chunks = await copyBytes("SELECT md5(i::text) || ' ü', i::int8 FROM generate_series(1, 5000) AS i")
    const decode = vi.spyOn(TextDecoder.prototype, "decode")
    const toString = vi.spyOn(Buffer.prototype, "toString")
    try {
      expect(lastBatch(chunks)[0]!.length).toBe(5000)
      expect(decode).not.toHaveBeenCalled()
      expect(toString).not.toHaveBeenCalled()
    } finally {
      decode.mockRestore()
      toString.mockRestore()
    }
  })
})

describe("filter values inlined into COPY", () => {
  it("an E'' literal reads back as the exact string, whatever standard_conforming_strings says", async () => {
    const nasty = ["it's", "back\\slash", "\\'; DROP TABLE x; --", "$$ $a$ */ /*", "line\nbreak\ttab", "ünï 🎉", "''", "\\", "E'x'", "%_"]
    for (const conforming of ["on", "off"]) {
      const rows = await pool.begin(async (sql) => {
        await sql.unsafe(`SET LOCAL standard_conforming_strings = ${conforming}`)
        return sql.unsafe(`SELECT ${nasty.map((value, i) => `${quoteEscapedLiteral(value)} AS v${i}`).join(", ")}`)
      })
      expect(Object.values(rows[0]!), `standard_conforming_strings = ${conforming}`).toEqual(nasty)
    }
  })
})
