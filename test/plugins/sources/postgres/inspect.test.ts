import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { SourceError } from "../../../../src/core/errors.js"
import { SourceDriver, type SourceQuery } from "../../../../src/core/plugin.js"
import { boundsStatement, renderStatement } from "../../../../src/plugins/sources/postgres/statement.js"
import { testPgUrl } from "../../../support/pg.js"
import { base, useQueryFixture } from "./query-fixture.js"
import { query, sourceLayer, testSource } from "./support.js"

const { names, admin, ids, where } = useQueryFixture("rivet_pgi")
const { T, CK, NOPK, EMPTY, BIG, SCHEMA } = names

describe("postgres source: bounds", () => {
  it.effect("reads min, max and NULLs as PostgreSQL text that binds back as a parameter", () =>
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const bounds = (column: string, q: SourceQuery = base(T)) => driver.bounds!(q, column)
      expect(yield* bounds("id")).toEqual({ min: "1", max: "3000000000", hasNulls: false })
      expect(yield* bounds("n")).toEqual({ min: "5", max: "30", hasNulls: true })
      expect(yield* bounds("label")).toEqual({ min: "alpha", max: "zeta", hasNulls: false })
      expect(yield* bounds("day")).toEqual({ min: "2026-01-01", max: "2027-01-01", hasNulls: false })
      const at = yield* bounds("at")
      expect(at).toEqual({ min: "2026-01-01 00:00:00.000001+00", max: "2027-01-01 00:00:00+00", hasNulls: false })
      expect(yield* bounds("u")).toEqual({
        min: "00000000-0000-0000-0000-000000000001",
        max: "ffffffff-0000-0000-0000-000000000000",
        hasNulls: false
      })
      expect(yield* bounds("amount")).toEqual({ min: "0.99", max: "100.00", hasNulls: false })
      expect(yield* bounds("ts")).toEqual({ min: "2026-01-01 00:00:00.000001", max: "2027-01-01 00:00:00", hasNulls: false })
      expect(yield* ids(where({ _tag: "Between", column: "at", low: at.min!, high: at.max! }))).toHaveLength(6)
      expect(yield* ids(where({ _tag: "After", columns: ["at"], values: [at.min!] }))).toHaveLength(5)
      // over the filtered rows only
      expect(yield* bounds("n", where({ _tag: "Between", column: "id", low: "5", high: "11" }))).toEqual({
        min: "5",
        max: "30",
        hasNulls: true
      })
      expect(yield* bounds("n", where({ _tag: "IsNull", column: "n" }))).toEqual({ min: null, max: null, hasNulls: true })
      expect(yield* bounds("id", base(EMPTY))).toEqual({ min: null, max: null, hasNulls: false })
      expect(yield* bounds("at", base(EMPTY))).toEqual({ min: null, max: null, hasNulls: false })
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("names an unknown column and lists the query's columns", () =>
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const error = yield* Effect.flip(driver.bounds!(query(`select id, label from ${T}`), "updated_at"))
      expect(error).toBeInstanceOf(SourceError)
      expect(error.message).toContain('export "test"')
      expect(error.message).toContain('"updated_at"')
      expect(error.hint).toBe("the query returns: id, label")
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("runs under the source's statement timeout", () =>
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const error = yield* Effect.flip(driver.bounds!(query("select 1 as x from pg_sleep(3)"), "x"))
      expect(error.message).toContain("57014")
      expect(error.hint).toContain("statement_timeout_s")
    }).pipe(Effect.provide(sourceLayer({ url_env: "PG", statement_timeout_s: 1 }, { PG: testPgUrl() })))
  )

  it.effect("lets PostgreSQL answer min and max of a plain table from its index", () =>
    Effect.gen(function* () {
      const statement = boundsStatement(renderStatement(base(BIG)), "id")
      const plan = (yield* Effect.promise(() => admin().unsafe(`explain ${statement.text}`).values()))
        .map((row) => String(row[0]))
        .join("\n")
      expect(plan).toContain(`Index Only Scan using ${BIG}_pkey`)
      expect(plan).toContain(`Index Only Scan Backward using ${BIG}_pkey`)
      expect(plan).not.toMatch(/Sort/)
      const driver = yield* SourceDriver
      expect(yield* driver.bounds!(base(BIG), "id")).toEqual({ min: "1", max: "20000", hasNulls: false })
    }).pipe(Effect.provide(testSource()))
  )
})

describe("postgres source: describe", () => {
  const sameAsOpen = (q: SourceQuery) =>
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const described = yield* driver.describe!(q)
      const opened = yield* Effect.scoped(Effect.map(driver.open(q), (result) => result.schema))
      expect(described.schema).toEqual(opened)
      return described
    })

  it.effect("returns the schema open reads and the table's primary key in key order", () =>
    Effect.gen(function* () {
      const table = yield* sameAsOpen(where({ _tag: "AtLeast", column: "at", value: "2026-01-02T00:00:00Z" }))
      expect(table.schema.columns.map((c) => `${c.name}:${c.sourceType}`)).toEqual([
        "id:int8",
        "n:int4",
        "label:text",
        "at:timestamptz",
        "day:date",
        "ts:timestamp",
        "amount:numeric(10,2)",
        "u:uuid",
        "flag:bool"
      ])
      expect(table.primaryKey).toEqual(["id"])
      expect((yield* sameAsOpen(base(CK))).primaryKey).toEqual(["b", "a"])
      expect((yield* sameAsOpen(base(NOPK))).primaryKey).toEqual([])
      const qualified: SourceQuery = { ...query(""), base: { _tag: "Table", schema: SCHEMA, name: "keyed" } }
      expect((yield* sameAsOpen(qualified)).primaryKey).toEqual(["k"])
      const overridden = query(`select id, n from ${T}`, { columnTypes: { n: { kind: "int64" } } })
      const plain = yield* sameAsOpen(overridden)
      expect(plain.schema.columns[1]?.type).toEqual({ kind: "int64" })
      expect(plain.primaryKey).toEqual([])
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("resolves an unqualified table with the source's schema", () =>
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const keyed = yield* driver.describe!({ ...query(""), base: { _tag: "Table", name: "keyed" } })
      expect(keyed.primaryKey).toEqual(["k"])
      // the fixture table exists in both schemas: the source's schema wins, as it does for the export's query
      const shadowed = yield* driver.describe!(base(T))
      expect(shadowed.schema.columns.map((c) => c.name)).toEqual(["other"])
      expect(shadowed.primaryKey).toEqual(["other"])
    }).pipe(Effect.provide(sourceLayer({ url_env: "PG", schema: SCHEMA }, { PG: testPgUrl() })))
  )

  it.effect("fails as open does for unmappable columns and unknown overrides", () =>
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const outcomes: Array<string> = []
      for (const q of [
        query("select 1.5::numeric as amount"),
        query(`select id from ${T}`, { columnTypes: { idd: { kind: "int64" } } }),
        query(`select id from ${T}`, { columnTypes: {} }),
        { ...query(`select id from ${T}`), where: [{ _tag: "AtLeast", column: "nope", value: "1" }] as const }
      ]) {
        const fromDescribe = yield* Effect.either(Effect.map(driver.describe!(q), (d) => d.schema))
        const fromOpen = yield* Effect.either(Effect.scoped(Effect.map(driver.open(q), (r) => r.schema)))
        expect(fromDescribe).toEqual(fromOpen)
        outcomes.push(fromDescribe._tag)
      }
      expect(outcomes).toEqual(["Left", "Left", "Right", "Left"])
      const missing = yield* Effect.flip(driver.describe!(base("rivet_pgi_no_such_table")))
      expect(missing.message).toContain("42P01")
      expect(missing.hint).toContain("`table:`")
      const bad = yield* Effect.flip(driver.describe!(base(T, { limit: -1 })))
      expect(bad.message).toContain("non-negative integer")
    }).pipe(Effect.provide(testSource()))
  )
})
