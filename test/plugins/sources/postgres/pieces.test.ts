import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { BatchSchema, LogicalType } from "../../../../src/core/batch.js"
import { type RowFilter, SourceDriver, type SourceQuery } from "../../../../src/core/plugin.js"
import { queryPieces } from "../../../../src/plugins/sources/postgres/pieces.js"
import { query, readAll, rowsOf, testSource } from "./support.js"

const schemaOf = (id: LogicalType): BatchSchema => ({
  columns: [
    { name: "id", type: id },
    { name: "label", type: { kind: "string" } }
  ]
})
const INT8 = schemaOf({ kind: "int64" })

const chunk = (low: string, high: string, extra: Partial<SourceQuery> = {}): SourceQuery => ({
  exportName: "e",
  base: { _tag: "Query", sql: "select * from t" },
  where: [{ _tag: "Between", column: "id", low, high }],
  batchSize: 10_000,
  columnTypes: new Map(),
  ...extra
})

const ranges = (pieces: ReadonlyArray<SourceQuery>) =>
  pieces.map((piece) => {
    const range = piece.where!.find((filter) => filter._tag === "Between") as Extract<RowFilter, { _tag: "Between" }>
    return [range.low, range.high]
  })

describe("a chunk read in pieces", () => {
  it("splits an integer chunk into contiguous ranges of batch_size keys, in order, the last one cut at the bound", () => {
    expect(ranges(queryPieces(chunk("1", "35000"), INT8))).toEqual([
      ["1", "10000"],
      ["10001", "20000"],
      ["20001", "30000"],
      ["30001", "35000"]
    ])
  })

  it("keeps the other filters, in their places, and an order by the chunk column", () => {
    const others: ReadonlyArray<RowFilter> = [
      { _tag: "AtMost", column: "id", value: "99999" },
      { _tag: "Between", column: "id", low: "-20000", high: "-1" },
      { _tag: "IsNull", column: "label" }
    ]
    const pieces = queryPieces(chunk("", "", { where: others, orderBy: ["id"] }), INT8)
    expect(pieces).toHaveLength(2)
    expect(pieces[1]!.where).toEqual([others[0], { _tag: "Between", column: "id", low: "-10000", high: "-1" }, others[2]])
    expect(pieces[1]!.orderBy).toEqual(["id"])
  })

  it("never makes more than 64 pieces, and keeps exact 64-bit bounds", () => {
    const wide = queryPieces(chunk("-9223372036854775808", "9223372036854775807", { batchSize: 100 }), INT8)
    expect(wide).toHaveLength(64)
    const bounds = ranges(wide)
    expect(bounds[0]![0]).toBe("-9223372036854775808")
    expect(bounds.at(-1)![1]).toBe("9223372036854775807")
    for (let i = 1; i < bounds.length; i++) expect(BigInt(bounds[i]![0]!)).toBe(BigInt(bounds[i - 1]![1]!) + 1n)
  })

  it("leaves one query for a chunk within one piece, a LIMIT, another order, a non-integer key or no range", () => {
    const one = (query: SourceQuery, schema = INT8) => expect(queryPieces(query, schema)).toEqual([query])
    one(chunk("1", "10000"))
    one(chunk("1", "35000", { limit: 5 }))
    one(chunk("1", "35000", { orderBy: ["label"] }))
    one(chunk("1", "35000"), schemaOf({ kind: "decimal", precision: 20, scale: 0 }))
    one(chunk("2026-01-01", "2026-12-31"), schemaOf({ kind: "date" }))
    one({ ...chunk("1", "2"), where: [{ _tag: "IsNull", column: "id" }] })
  })
})

describe("a chunk read in pieces from PostgreSQL", () => {
  // Even keys 2…100 and batch_size 10: pieces of 10 keys hold 5 rows each, so every piece ends its own batch —
  // 10 batches of 5 rows, where one COPY of the chunk would give 5 batches of 10.
  const sparse = (extra: Partial<SourceQuery> = {}): SourceQuery => ({
    ...query("select i * 2 as id, 'row ' || i as label from generate_series(1, 50) as i", { batchSize: 10 }),
    where: [{ _tag: "Between", column: "id", low: "1", high: "100" }],
    ...extra
  })

  it.effect("reads every piece in key order, each ending its own batch", () =>
    Effect.gen(function* () {
      const { batches } = yield* readAll(sparse())
      expect(batches.map((batch) => batch.rowCount)).toEqual(Array<number>(10).fill(5))
      expect(rowsOf(batches).map((row) => row["id"])).toEqual(Array.from({ length: 50 }, (_, i) => (i + 1) * 2))
      expect(rowsOf(batches).at(-1)!["label"]).toBe("row 50")
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("rendered CSV of a chunk read in pieces has every row once, in key order", () =>
    Effect.gen(function* () {
      const opened = yield* Effect.scoped(
        Effect.gen(function* () {
          const driver = yield* SourceDriver
          const rendered = yield* driver.openRendered!(sparse(), "csv")
          if (rendered._tag !== "Rendered") return []
          return Chunk.toReadonlyArray(yield* Stream.runCollect(rendered.chunks))
        })
      )
      const text = Buffer.concat(opened.map((chunk) => chunk.bytes)).toString("utf8")
      expect(text).toBe(Array.from({ length: 50 }, (_, i) => `${(i + 1) * 2},row ${i + 1}\n`).join(""))
      expect(opened.reduce((sum, chunk) => sum + chunk.rows, 0)).toBe(50)
    }).pipe(Effect.provide(testSource()))
  )
})

describe("a keyset page read in pieces from PostgreSQL", () => {
  // batch_size 10 against a page of 1 000 rows: pieces of 16 rows (at most 64 pieces), each ending its own batch —
  // 10 + 6 rows per piece, where the page's one query gives batches of 10.
  const page = (sql: string, orderBy: ReadonlyArray<string>, extra: Partial<SourceQuery> = {}): SourceQuery => ({
    ...query(sql, { batchSize: 10 }),
    orderBy,
    limit: 1000,
    uniqueOrder: true,
    ...extra
  })
  const KEYED = "select i as id, 'row ' || i as label from generate_series(1, 100) as i where i % 7 <> 3"

  it.effect("reads the rows after the page's start in key order, each piece continuing after the last key read", () =>
    Effect.gen(function* () {
      const start: RowFilter = { _tag: "After", columns: ["id"], values: ["20"] }
      const pieces = yield* readAll(page(KEYED, ["id"], { where: [start] }))
      const whole = yield* readAll(page(KEYED, ["id"], { where: [start], uniqueOrder: false }))
      expect(whole.batches.map((batch) => batch.rowCount)).toEqual([10, 10, 10, 10, 10, 10, 9])
      expect(pieces.batches.map((batch) => batch.rowCount)).toEqual([10, 6, 10, 6, 10, 6, 10, 6, 5])
      expect(rowsOf(pieces.batches)).toEqual(rowsOf(whole.batches))
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("stops at the page's limit, the last piece cut to what is left", () =>
    Effect.gen(function* () {
      // 700 rows in at most 64 pieces: 63 of 11 rows (a batch of 10 and one of 1 each), then 7.
      const { batches } = yield* readAll(page(KEYED.replace("100", "1000"), ["id"], { limit: 700 }))
      expect(batches.map((batch) => batch.rowCount)).toEqual([...Array.from({ length: 63 }, () => [10, 1]).flat(), 7])
      expect(rowsOf(batches).map((row) => row["id"])).toEqual(
        Array.from({ length: 1000 }, (_, i) => i + 1).filter((i) => i % 7 !== 3).slice(0, 700)
      )
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("continues exactly after keys of text and microsecond timestamps", () =>
    Effect.gen(function* () {
      const sql =
        "select g.grp, timestamp '2026-01-01 00:00:00' + i * interval '1.000001 second' as at, i as n " +
        "from generate_series(1, 60) as i, (values ('a''b ü'), ('a''b'), ('\\z')) as g(grp)"
      const pieces = yield* readAll(page(sql, ["grp", "at"]))
      const whole = yield* readAll(page(sql, ["grp", "at"], { uniqueOrder: false }))
      expect(pieces.batches.length).toBeGreaterThan(whole.batches.length)
      expect(rowsOf(pieces.batches)).toHaveLength(180)
      expect(rowsOf(pieces.batches)).toEqual(rowsOf(whole.batches))
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("a NULL key where a piece ends fails the read, naming the column", () =>
    Effect.gen(function* () {
      const sql = "select case when i <= 12 then i end as id from generate_series(1, 20) as i"
      const error = yield* Effect.flip(readAll(page(sql, ["id"])))
      expect(error.message).toContain(`NULL in its key column "id"`)
      expect(error.retryable).toBe(false)
    }).pipe(Effect.provide(testSource()))
  )
})
