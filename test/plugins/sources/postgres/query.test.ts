import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { type RowFilter, SourceDriver, type SourceQuery } from "../../../../src/core/plugin.js"
import postgresSource from "../../../../src/plugins/sources/postgres/index.js"
import { testPgUrl } from "../../../support/pg.js"
import { base, useQueryFixture } from "./query-fixture.js"
import { query, readAll, rowsOf, testSource } from "./support.js"

const { names, admin, ids, where } = useQueryFixture("rivet_pgq")
const { T, CK } = names

describe("postgres source: filtered queries", () => {
  it.effect("each filter kind returns exactly the expected rows, with values typed by their column", () =>
    Effect.gen(function* () {
      expect(yield* ids(where({ _tag: "Between", column: "id", low: "2", high: "10" }))).toEqual(["2", "5", "10"])
      expect(yield* ids(where({ _tag: "Between", column: "id", low: "11", high: "3000000000" }))).toEqual(["11", "3000000000"])
      expect(yield* ids(where({ _tag: "IsNull", column: "n" }))).toEqual(["2", "10"])
      expect(yield* ids(where({ _tag: "After", columns: ["id"], values: ["5"] }))).toEqual(["10", "11", "3000000000"])
      expect(yield* ids(where({ _tag: "AtLeast", column: "n", value: "7" }))).toEqual(["1", "5", "3000000000"])
      expect(yield* ids(where({ _tag: "AtMost", column: "n", value: "7" }))).toEqual(["11", "3000000000"])
      // microseconds decide: both timestamp forms the runtime produces, and PostgreSQL's own text
      const at = (value: string) => where({ _tag: "AtLeast", column: "at", value })
      expect(yield* ids(at("2026-01-02T03:04:05.123456Z"))).toEqual(["2", "5", "10", "11", "3000000000"])
      expect(yield* ids(at("2026-01-02T03:04:05.123457Z"))).toEqual(["5", "10", "11", "3000000000"])
      expect(yield* ids(at("2026-01-02 03:04:05.123457+00"))).toEqual(["5", "10", "11", "3000000000"])
      const ts = (value: string) => where({ _tag: "AtMost", column: "ts", value })
      expect(yield* ids(ts("2026-01-02T03:04:05.123456"))).toEqual(["1", "2"])
      expect(yield* ids(where({ _tag: "Between", column: "day", low: "2026-01-02", high: "2026-02-01" }))).toEqual([
        "2",
        "5",
        "10"
      ])
      expect(yield* ids(where({ _tag: "AtLeast", column: "amount", value: "2.01" }))).toEqual(["5", "10", "3000000000"])
      expect(yield* ids(where({ _tag: "AtMost", column: "label", value: "beta" }))).toEqual(["1", "2"])
      expect(yield* ids(where({ _tag: "After", columns: ["label"], values: ["o'hara"] }))).toEqual(["3000000000"])
      expect(
        yield* ids(where({ _tag: "Between", column: "u", low: "00000000-0000-0000-0000-000000000002", high: "00000000-0000-0000-0000-000000000010" }))
      ).toEqual(["2", "5", "10"])
      expect(yield* ids(where({ _tag: "AtLeast", column: "flag", value: "t" }))).toEqual(["1", "5", "11"])
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("compares rows of mixed types and combines filters", () =>
    Effect.gen(function* () {
      const after = (columns: Array<string>, values: Array<string>) =>
        base(T, { where: [{ _tag: "After", columns, values }], orderBy: [...columns] })
      expect(yield* ids(after(["day", "id"], ["2026-01-02", "2"]))).toEqual(["5", "10", "11", "3000000000"])
      expect(yield* ids(after(["at", "label", "id"], ["2026-01-02T03:04:05.123456Z", "beta", "2"]))).toEqual([
        "5",
        "10",
        "11",
        "3000000000"
      ])
      expect(yield* ids(after(["amount", "u"], ["2.00", "00000000-0000-0000-0000-000000000001"]))).toEqual([
        "2",
        "5",
        "3000000000",
        "10"
      ])
      const combined = where(
        { _tag: "AtLeast", column: "at", value: "2026-01-02T00:00:00Z" },
        { _tag: "AtMost", column: "at", value: "2026-03-01T12:00:00Z" },
        { _tag: "IsNull", column: "n" }
      )
      expect(yield* ids(combined)).toEqual(["2", "10"])
      expect(yield* ids(base(T, { orderBy: ["id"], limit: 2 }))).toEqual(["1", "2"])
      expect(yield* ids(base(T, { orderBy: ["id"], limit: 0 }))).toEqual([])
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("pages through a composite key with After, ORDER BY and LIMIT, reading every row once", () =>
    Effect.gen(function* () {
      const seen: Array<string> = []
      let position: ReadonlyArray<string> | undefined
      for (let page = 0; page < 20; page++) {
        const q: SourceQuery = {
          ...base(CK, { orderBy: ["b", "a"], limit: 4, batchSize: 3 }),
          ...(position === undefined ? {} : { where: [{ _tag: "After", columns: ["b", "a"], values: position }] })
        }
        const rows = rowsOf((yield* readAll(q)).batches)
        if (rows.length === 0) break
        seen.push(...rows.map((row) => `${row["b"]}/${row["a"]}`))
        const last = rows[rows.length - 1]!
        position = [String(last["b"]), String(last["a"])]
      }
      const expected = (yield* Effect.promise(() =>
        admin().unsafe<Array<{ k: string }>>(`select b || '/' || a as k from ${CK} order by b, a`)
      )).map((row) => row.k)
      expect(expected.length).toBe(17)
      expect(seen).toEqual(expected)
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("wraps a base query that ends with a semicolon or a line comment", () =>
    Effect.gen(function* () {
      const filter: RowFilter = { _tag: "Between", column: "id", low: "2", high: "5" }
      for (const sqlText of [`select id, amount from ${T};\n`, `select id, amount from ${T} -- every order`]) {
        const { schema, batches } = yield* readAll({ ...query(sqlText), where: [filter], orderBy: ["id"] })
        expect(rowsOf(batches)).toEqual([
          { id: 2n, amount: "2.00" },
          { id: 5n, amount: "2.01" }
        ])
        expect(schema.columns[1]).toEqual({ name: "amount", type: { kind: "decimal", precision: 10, scale: 2 }, sourceType: "numeric(10,2)" })
      }
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("renders the statement for display with the values inline", () =>
    Effect.flatMap(SourceDriver, (driver) =>
      Effect.sync(() => {
        const q = where({ _tag: "AtLeast", column: "label", value: "o'hara" })
        expect(driver.render?.(q)).toBe(
          `SELECT * FROM (SELECT * FROM "${T}"\n) AS _rivet WHERE "label" >= 'o''hara' ORDER BY "id"`
        )
        expect(driver.render?.(query("select 1"))).toBe("select 1")
      })
    ).pipe(Effect.provide(testSource()))
  )
})

describe("postgres source: pool", () => {
  const layerWith = (concurrency: number, applicationName: string): Layer.Layer<SourceDriver, unknown> =>
    Layer.unwrapEffect(
      Schema.decodeUnknown(postgresSource.config)({ url_env: "PG", application_name: applicationName }).pipe(
        Effect.map((config) =>
          postgresSource.make(config, { configDir: process.cwd(), env: { PG: testPgUrl() }, concurrency })
        )
      )
    )

  it.live("holds four results open at once and still plans alongside them", () =>
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      yield* Effect.scoped(
        Effect.gen(function* () {
          const results = yield* Effect.forEach([0, 1, 2, 3], (i) =>
            driver.open(where({ _tag: "AtLeast", column: "id", value: String(i) })), { concurrency: "unbounded" }
          )
          const planning = yield* Effect.all([driver.describe!(base(T)), driver.bounds!(base(T), "id")], {
            concurrency: "unbounded"
          }).pipe(Effect.timeout("10 seconds"))
          expect(planning[0].primaryKey).toEqual(["id"])
          const counts = yield* Effect.forEach(
            results,
            (result) => Stream.runFold(result.batches, 0, (rows, batch) => rows + batch.rowCount),
            { concurrency: "unbounded" }
          )
          expect(counts).toEqual([6, 6, 5, 4])
          const open = yield* Effect.promise(() =>
            admin().unsafe("select count(*)::int as n from pg_stat_activity where application_name = $1", ["rivet-pgq-pool"])
          )
          expect(open[0]?.["n"]).toBeGreaterThanOrEqual(4)
        })
      )
    }).pipe(Effect.provide(layerWith(4, "rivet-pgq-pool")))
  )
})
