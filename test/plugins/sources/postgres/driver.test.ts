import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import * as Chunk from "effect/Chunk"
import type postgres from "postgres"
import { columnValues } from "../../../../src/core/batch.js"
import { SourceError } from "../../../../src/core/errors.js"
import { SourceDriver } from "../../../../src/core/plugin.js"
import { testPgUrl } from "../../../support/pg.js"
import { adminSql, query, readAll, rowsOf, sourceLayer, testSource } from "./support.js"

const T = "rivet_pgdriver_t"
const SCHEMA = "rivet_pgdriver_schema"
let sql: postgres.Sql

beforeAll(async () => {
  sql = adminSql()
  await sql.unsafe(`
    drop view if exists ${T}_v;
    drop table if exists ${T};
    drop schema if exists ${SCHEMA} cascade;
    create table ${T} (id int4, amount numeric, price numeric(6,2), spot point, doc tsvector, cash money, grid int4[]);
    insert into ${T} values
      (1, 12.5, 1.50, '(1,2)', 'a b', 1.25, '{{1,2},{3,4}}'),
      (2, 'NaN', 2.00, '(3,4)', 'c', 2.5, '{1}');
    create view ${T}_v as select id, price, (price * 2)::numeric(9,3) as doubled from ${T};
    create schema ${SCHEMA};
    create table ${SCHEMA}.only_here (v text);
    insert into ${SCHEMA}.only_here values ('found');
  `)
})

afterAll(async () => {
  await sql.unsafe(`drop view if exists ${T}_v; drop table if exists ${T}; drop schema if exists ${SCHEMA} cascade;`)
  await sql.end()
})

const openError = (q: ReturnType<typeof query>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      return yield* Effect.flip(driver.open(q))
    })
  )

/** Batches up to the first failure: row counts, then the error (if any). */
const readUntilError = (q: ReturnType<typeof query>) =>
  Effect.scoped(
    Effect.gen(function* () {
      const driver = yield* SourceDriver
      const result = yield* driver.open(q)
      const items = Chunk.toReadonlyArray(yield* Stream.runCollect(Stream.either(result.batches)))
      return {
        rowCounts: items.filter(Either.isRight).map((item) => item.right.rowCount),
        error: items.find(Either.isLeft)?.left
      }
    })
  )

const sessions = (applicationName: string) =>
  Effect.promise(() =>
    sql.unsafe<Array<{ state: string; wait_event_type: string | null }>>(
      "select state, wait_event_type from pg_stat_activity where application_name = $1",
      [applicationName]
    )
  )

describe("postgres source: reading", () => {
  it.effect("reads in batches of batchSize rows", () =>
    Effect.gen(function* () {
      const { schema, batches } = yield* readAll(
        query("select i as n from generate_series(1, 10) i", { batchSize: 3 })
      )
      expect(schema.columns.map((c) => c.name)).toEqual(["n"])
      expect(batches.map((b) => b.rowCount)).toEqual([3, 3, 3, 1])
      expect(rowsOf(batches).map((r) => r["n"])).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10])
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("knows the schema of a query that returns no rows", () =>
    Effect.gen(function* () {
      const { schema, batches } = yield* readAll(query(`select id, price from ${T} where false`))
      expect(schema.columns).toEqual([
        { name: "id", type: { kind: "int32" }, sourceType: "int4" },
        { name: "price", type: { kind: "decimal", precision: 6, scale: 2 }, sourceType: "numeric(6,2)" }
      ])
      expect(batches).toEqual([])
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("keeps duplicate column names apart", () =>
    Effect.gen(function* () {
      const { schema, batches } = yield* readAll(query("select 1 as a, 'two' as a, 3::int8 as a"))
      expect(schema.columns.map((c) => c.name)).toEqual(["a", "a", "a"])
      expect(batches[0]!.columns.map((column, i) => columnValues(column, schema.columns[i]!.type))).toEqual([[1], ["two"], [3n]])
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("resolves unqualified names in the configured schema", () =>
    Effect.gen(function* () {
      const { batches } = yield* readAll(query("select v from only_here"))
      expect(rowsOf(batches)).toEqual([{ v: "found" }])
    }).pipe(Effect.provide(sourceLayer({ url_env: "PG", schema: SCHEMA }, { PG: testPgUrl() })))
  )
})

describe("postgres source: types that need a decision", () => {
  it.effect("refuses an unbounded numeric before streaming, naming the column and the fix", () =>
    Effect.gen(function* () {
      for (const sqlText of [`select id, amount from ${T}`, "select 1.5::numeric as amount"]) {
        const error = yield* openError(query(sqlText))
        expect(error).toBeInstanceOf(SourceError)
        expect(error.retryable).toBe(false)
        expect(error.message).toContain('export "test"')
        expect(error.message).toContain("amount: numeric has no declared precision and scale")
        expect(error.hint).toContain('columns: { amount: { type: "decimal(38,9)" } }')
      }
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("reads numeric precision through views and joins from the catalog", () =>
    Effect.gen(function* () {
      const { schema, batches } = yield* readAll(
        query(`select v.doubled, t.price from ${T}_v v join ${T} t using (id) where id = 1`)
      )
      expect(schema.columns.map((c) => [c.name, c.sourceType])).toEqual([
        ["doubled", "numeric(9,3)"],
        ["price", "numeric(6,2)"]
      ])
      expect(rowsOf(batches)).toEqual([{ doubled: "3.000", price: "1.50" }])
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("applies a decimal override exactly, and refuses to round", () =>
    Effect.gen(function* () {
      const ok = yield* readAll(
        query(`select id, amount, price from ${T} where id = 1`, {
          columnTypes: { amount: { kind: "decimal", precision: 10, scale: 3 }, price: { kind: "decimal", precision: 8, scale: 4 } }
        })
      )
      expect(ok.schema.columns[1]).toEqual({
        name: "amount",
        type: { kind: "decimal", precision: 10, scale: 3 },
        sourceType: "numeric"
      })
      expect(rowsOf(ok.batches)).toEqual([{ id: 1, amount: "12.500", price: "1.5000" }])

      const rounded = yield* readUntilError(
        query(`select amount from ${T} where id = 1`, { columnTypes: { amount: { kind: "decimal", precision: 10, scale: 0 } } })
      )
      expect(rounded.rowCounts).toEqual([])
      expect(rounded.error?.message).toContain('column "amount"')
      expect(rounded.error?.message).toContain("never rounds")
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("fails on numeric NaN with the column named", () =>
    Effect.gen(function* () {
      const { error } = yield* readUntilError(
        query(`select amount from ${T} where id = 2`, { columnTypes: { amount: { kind: "decimal", precision: 10, scale: 2 } } })
      )
      expect(error?.message).toContain('column "amount" (numeric → decimal(10,2)): value NaN has no decimal representation')
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("refuses unmappable types before streaming, listing each with its fix", () =>
    Effect.gen(function* () {
      const error = yield* openError(query(`select id, spot, doc, cash from ${T}`))
      expect(error.message).toContain("3 column(s) cannot be exported")
      expect(error.message).toContain("spot: PostgreSQL type point has no lossless logical type")
      expect(error.message).toContain("doc: PostgreSQL type tsvector")
      expect(error.message).toContain("cash: PostgreSQL type money")
      expect(error.hint).toContain('"spot"::text')
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("passes PostgreSQL's text through for a string override", () =>
    Effect.gen(function* () {
      const { schema, batches } = yield* readAll(
        query(`select spot, grid from ${T} order by id`, {
          columnTypes: { spot: { kind: "string" }, grid: { kind: "string" } }
        })
      )
      expect(schema.columns.map((c) => c.type.kind)).toEqual(["string", "string"])
      expect(rowsOf(batches)).toEqual([
        { spot: "(1,2)", grid: "{{1,2},{3,4}}" },
        { spot: "(3,4)", grid: "{1}" }
      ])
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("rejects overrides of unknown columns and unsupported conversions", () =>
    Effect.gen(function* () {
      const unknown = yield* openError(query(`select id from ${T}`, { columnTypes: { idd: { kind: "int64" } } }))
      expect(unknown.message).toContain('overrides name "idd"')
      expect(unknown.hint).toContain("id")
      const unsupported = yield* openError(query("select true as flag", { columnTypes: { flag: { kind: "int64" } } }))
      expect(unsupported.message).toContain("the override int64 does not fit PostgreSQL type bool")
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("fails on a multi-dimensional array naming the column", () =>
    Effect.gen(function* () {
      const { error } = yield* readUntilError(query(`select grid from ${T} order by id`))
      expect(error?.message).toContain('column "grid" (int4[] → list<int32>): multi-dimensional arrays are not supported')
    }).pipe(Effect.provide(testSource()))
  )
})

describe("postgres source: failures", () => {
  it.effect("surfaces a query error after some batches as a SourceError", () =>
    Effect.gen(function* () {
      const { rowCounts, error } = yield* readUntilError(
        query("select case when i > 25 then 1/(i-i) else i end as v from generate_series(1,50) i", { batchSize: 10 })
      )
      // Read with COPY, the batches decoded before the error arrived are delivered first; rows still waiting in the
      // paused stream when the server reports the error are dropped with it.
      expect(rowCounts.length).toBeGreaterThanOrEqual(1)
      expect(rowCounts.every((count) => count === 10)).toBe(true)
      expect(error).toBeInstanceOf(SourceError)
      expect(error?.message).toContain("22012")
      expect(error?.message).toContain("division by zero")
      expect(error?.retryable).toBe(false)
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("maps query errors with hints", () =>
    Effect.gen(function* () {
      const syntax = yield* openError(query("selec 1"))
      expect(syntax.message).toContain("42601")
      expect(syntax.hint).toContain("query")
      const missing = yield* openError({ ...query(""), base: { _tag: "Table", name: "rivet_no_such_table" } })
      expect(missing.message).toContain("42P01")
      expect(missing.hint).toContain("`table:`")
      const writes = yield* readUntilError(query(`update ${T} set id = id returning id`))
      expect(writes.error?.message).toContain("25006")
      expect(writes.error?.hint).toContain("read-only")
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("reports a statement timeout with the setting to change", () =>
    Effect.gen(function* () {
      const { error } = yield* readUntilError(query("select 1 as s from pg_sleep(3)"))
      expect(error?.message).toContain("57014")
      expect(error?.retryable).toBe(false)
      expect(error?.hint).toContain("statement_timeout_s")
    }).pipe(Effect.provide(sourceLayer({ url_env: "PG", statement_timeout_s: 1 }, { PG: testPgUrl() })))
  )

  it.effect("fails on an unknown database or role without retry", () =>
    Effect.gen(function* () {
      const db = new URL(testPgUrl())
      db.pathname = "/rivet_no_such_db"
      const noDb = yield* Effect.flip(
        Effect.flatMap(SourceDriver, (d) => d.check).pipe(Effect.provide(sourceLayer({ url_env: "PG" }, { PG: db.toString() })))
      )
      expect(noDb).toMatchObject({ _tag: "SourceError", retryable: false })
      expect((noDb as SourceError).message).toContain("3D000")
      const role = new URL(testPgUrl())
      role.username = "rivet_no_such_role"
      const noRole = yield* Effect.flip(
        Effect.flatMap(SourceDriver, (d) => d.check).pipe(Effect.provide(sourceLayer({ url_env: "PG" }, { PG: role.toString() })))
      )
      expect((noRole as SourceError).message).toContain("28000")
    })
  )
})

describe("postgres source: connection and secrets", () => {
  it.effect("masks the password in displayUrl and in connection errors", () =>
    Effect.gen(function* () {
      const url = "postgres://rivet:topsecretpw@127.0.0.1:1/test"
      const driver = yield* SourceDriver
      expect(driver.displayUrl).toBe("postgres://rivet:***@127.0.0.1:1/test")
      const error = yield* Effect.flip(driver.check)
      expect(error.retryable).toBe(true)
      expect(error.message).toContain("postgres://rivet:***@127.0.0.1:1/test")
      expect(JSON.stringify(error)).not.toContain("topsecretpw")
      expect(url).toContain("topsecretpw")
    }).pipe(Effect.provide(sourceLayer({ url: "postgres://rivet:topsecretpw@127.0.0.1:1/test" })))
  )

  it.effect("checks a reachable database", () =>
    Effect.flatMap(SourceDriver, (driver) => driver.check).pipe(Effect.provide(testSource()))
  )

  it.effect("names an unset url_env variable", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Effect.scoped(Layer.build(sourceLayer({ url_env: "RIVET_TEST_UNSET_URL" }, {}))))
      expect(error).toBeInstanceOf(SourceError)
      expect((error as SourceError).message).toContain("RIVET_TEST_UNSET_URL")
    })
  )

  it.effect("rejects a URL that is not a PostgreSQL URL", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(Effect.scoped(Layer.build(sourceLayer({ url: "mysql://u:pw@h/db" }))))
      expect((error as SourceError).message).toContain("postgres://")
    })
  )
})

describe("postgres source: releasing", () => {
  it.effect("closing the scope after one batch ends the transaction and frees the connection", () =>
    Effect.gen(function* () {
      const app = "rivet-test-release"
      const layer = sourceLayer({ url_env: "PG", application_name: app }, { PG: testPgUrl() })
      yield* Effect.gen(function* () {
        const driver = yield* SourceDriver
        const first = yield* Effect.scoped(
          Effect.flatMap(driver.open(query("select i from generate_series(1, 100000) i", { batchSize: 100 })), (r) =>
            Stream.runCollect(Stream.take(r.batches, 1))
          )
        )
        expect(Chunk.size(first)).toBe(1)
        const states = (yield* sessions(app)).map((s) => s.state)
        expect(states.length).toBeGreaterThan(0)
        expect(states.every((state) => state === "idle")).toBe(true)
        // The freed connection serves the next export.
        const again = yield* readAll(query("select 1 as one"))
        expect(rowsOf(again.batches)).toEqual([{ one: 1 }])
      }).pipe(Effect.provide(layer))
    })
  )

  it.live("interrupting a consumer mid-fetch cancels the statement", () =>
    Effect.scoped(Effect.gen(function* () {
      const app = "rivet-test-interrupt"
      const layer = sourceLayer({ url_env: "PG", application_name: app, lock_timeout_s: 0 }, { PG: testPgUrl() })
      // A session-level advisory lock held by the test; the export's query waits for it at execution time.
      yield* Effect.acquireRelease(
        Effect.promise(async () => {
          const holder = await sql.reserve()
          await holder`select pg_advisory_lock(734211)`
          return holder
        }),
        (holder) =>
          Effect.promise(async () => {
            await holder`select pg_advisory_unlock(734211)`
            holder.release()
          })
      )
      yield* Effect.gen(function* () {
        const driver = yield* SourceDriver
        const fiber = yield* Effect.fork(
          Effect.scoped(
            Effect.flatMap(
              driver.open(query("select i from generate_series(1, 3) i cross join pg_advisory_xact_lock_shared(734211) l")),
              (r) => Stream.runDrain(r.batches)
            )
          )
        )
        const blocked = (rows: ReadonlyArray<{ state: string; wait_event_type: string | null }>) =>
          rows.some((row) => row.state === "active" && row.wait_event_type === "Lock")
        const seen = yield* sessions(app).pipe(
          Effect.delay("50 millis"),
          Effect.repeat({ until: (rows) => blocked(rows) || fiber.unsafePoll() !== null })
        )
        expect(blocked(seen)).toBe(true)
        // Without the cancel this interrupt would wait for a lock that is only released after it returns.
        yield* Fiber.interrupt(fiber)
        const states = (yield* sessions(app)).map((s) => s.state)
        expect(states.every((state) => state === "idle")).toBe(true)
      }).pipe(Effect.provide(layer))
    }))
  )
})
