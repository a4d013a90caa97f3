import { afterAll, beforeAll, describe, expect, it } from "vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Cause from "effect/Cause"
import * as Option from "effect/Option"
import postgres from "postgres"
import { columnValues, type LogicalType, makeBatch, type Value } from "../../../../src/core/batch.js"
import { planStatement } from "../../../../src/plugins/sources/postgres/result.js"
import { decodeColumns } from "../../../../src/plugins/sources/postgres/rows.js"
import { openSession } from "../../../../src/plugins/sources/postgres/session.js"
import { renderStatement } from "../../../../src/plugins/sources/postgres/statement.js"
import { testPgUrl } from "../../../support/pg.js"
import { adminSql, query, readAll, testSource } from "./support.js"

// The oracle for the binary COPY path: PostgreSQL's own text rendering of the same values, decoded by the text
// decoders the source used before (decode.ts, rows.ts). Every value must come out the same — or fail the same way.
const T = "rivet_binary_random"
const MOOD = "rivet_binary_mood"
const admin = adminSql()
// Configured as driver.ts configures its pool: every value arrives as PostgreSQL's text, in the session's formats.
const pool = postgres(testPgUrl(), {
  max: 2,
  fetch_types: false,
  prepare: false,
  onnotice: () => {},
  types: {
    rivetText: {
      to: 25,
      from: [16, 17, 21, 23, 26, 114, 700, 701, 1082, 1114, 1184, 3802],
      serialize: (value: unknown) => String(value)
    } as unknown as postgres.PostgresType<string>
  },
  connection: { TimeZone: "UTC", DateStyle: "ISO", IntervalStyle: "iso_8601", extra_float_digits: 3 }
})
const context = { displayUrl: "postgres://postgres@127.0.0.1/test", scrub: (text: string) => text, exportName: "test" }
const settings = { statementTimeoutMs: 0, lockTimeoutMs: 0, schema: "public" }

beforeAll(async () => {
  await admin.unsafe(`
    drop table if exists ${T};
    drop type if exists ${MOOD};
    create type ${MOOD} as enum ('happy', 'sad', 'ünïcode');
    select setseed(0.14);
    create table ${T} as
    select i as id,
      case when random() < 0.1 then null else (random() * 65535 - 32768)::int2 end as i2,
      case when random() < 0.1 then null else (random() * 4294967295 - 2147483648)::int4 end as i4,
      case when random() < 0.1 then null else (random() * 1.8e19 - 9e18)::int8 end as i8,
      case when random() < 0.1 then null when random() < 0.05 then 'NaN'::float4 else (random() * 2e6 - 1e6)::float4 end as f4,
      case when random() < 0.1 then null when random() < 0.05 then '-Infinity'::float8 else (random() - 0.5) * 10 ^ (random() * 600 - 300) end as f8,
      case when random() < 0.1 then null else round(((random() - 0.5) * 10 ^ (random() * 14))::numeric, 6)::numeric(20,6) end as n,
      case when random() < 0.1 then null else round(((random() - 0.5) * 10 ^ (random() * 30 - 10))::numeric, 12) end as n_free,
      case when random() < 0.1 then null else round(((random() - 0.5) * 10 ^ (random() * 5))::numeric, -2)::numeric(7,-2) end as n_neg,
      case when random() < 0.1 then null when random() < 0.1 then '' else
        (select string_agg(chr((case when random() < 0.6 then 32 + random() * 95 when random() < 0.7 then 160 + random() * 50000 else 128512 + random() * 80 end)::int), '')
         from generate_series(1, (random() * 40)::int + i * 0)) end as t,
      case when random() < 0.1 then null else (random() < 0.5) end as b,
      case when random() < 0.1 then null else date '2000-01-01' + (random() * 3000000 - 2000000)::int end as d,
      case when random() < 0.1 then null else time '00:00:00' + random() * interval '24 hours' end as tm,
      case when random() < 0.1 then null else timestamp '2000-01-01' + (random() * 2e11 - 1.4e11) * interval '1 second' end as ts,
      case when random() < 0.1 then null else timestamptz '2000-01-01 00:00:00+00' + (random() * 2e11 - 1.4e11) * interval '1 second' end as tstz,
      case when random() < 0.1 then null else md5(random()::text)::uuid end as u,
      case when random() < 0.1 then null else jsonb_build_object('a', random(), 'ü', md5(random()::text), 'n', (random() * 1e20)::numeric) end as jb,
      case when random() < 0.1 then null else json_build_object('x', random(), 'y', array[1, 2]) end as js,
      case when random() < 0.1 then null else decode(md5(random()::text), 'hex') end as by,
      case when random() < 0.1 then null else make_interval(
        (random() * 200 - 100)::int, (random() * 30 - 15)::int, 0, (random() * 60 - 30)::int,
        (random() * 1000 - 500)::int, (random() * 120 - 60)::int, round((random() * 100 - 50)::numeric, 6)::float8) end as iv,
      case when random() < 0.1 then null else (array['happy', 'sad', 'ünïcode'])[1 + (random() * 2.99)::int]::${MOOD} end as mood,
      case when random() < 0.1 then null else ('10.' || (random() * 255)::int || '.0.' || (random() * 255)::int || '/' || (8 + (random() * 24)::int))::inet end as ip,
      case when random() < 0.1 then null else chr(65 + (random() * 25)::int)::"char" end as ch,
      case when random() < 0.1 then null else
        array[case when random() < 0.3 then null else (random() * 1000)::int4 end, (random() * 10)::int4] end as a_i4,
      case when random() < 0.1 then null else
        array[case when random() < 0.3 then null else md5(random()::text) end, '', 'NULL', 'ä,{"}'] end as a_t,
      case when random() < 0.1 then null else array[round((random() * 1000)::numeric, 2), null]::numeric(8,3)[] end as a_n,
      case when random() < 0.1 then null else array[('192.168.0.' || (random() * 255)::int)::inet, null] end as a_ip,
      case when random() < 0.1 then null else array[make_interval(secs => random() * 10), null] end as a_iv
    from generate_series(1, 3000) as i;
  `)
})

afterAll(async () => {
  await admin.unsafe(`drop table if exists ${T}; drop type if exists ${MOOD};`)
  await admin.end()
  await pool.end({ timeout: 0 })
})

const failureOf = (exit: Exit.Exit<unknown, unknown>): { message: string } | undefined =>
  Exit.isFailure(exit) ? (Option.getOrUndefined(Cause.failureOption(exit.cause)) as { message: string }) : undefined

/**
 * The columns of `sql` read the old way: each column rendered by the server's output function (exactly the text
 * protocol's text), decoded with the plans' text decoders. Throws the text decoders' DecodeFailure.
 */
const textPath = (sql: string, columnTypes: Record<string, LogicalType> = {}) =>
  Effect.scoped(
    Effect.gen(function* () {
      const connection = yield* openSession(pool, settings, context)
      const q = query(sql, { columnTypes })
      const { plans, schema } = yield* planStatement(connection, q, renderStatement(q), context)
      const names = plans.map((_, i) => `t."c${i + 1}"`)
      const select = `SELECT ${names.map((n) => `CASE WHEN num_nulls(${n}) = 0 THEN format('%s', ${n}) END`).join(", ")} FROM (${sql}) AS t(${plans.map((_, i) => `"c${i + 1}"`).join(", ")})`
      const rows = (yield* Effect.promise(() => connection.unsafe(select).values())) as unknown as ReadonlyArray<ReadonlyArray<string | null>>
      // Through a batch as before, so that both paths meet the same edge (float32 storage, …).
      return yield* Effect.exit(
        Effect.try(() => {
          const batch = makeBatch(schema, decodeColumns(plans, rows))
          return batch.columns.map((column, c) => columnValues(column, schema.columns[c]!.type))
        })
      )
    })
  )

const binaryPath = (sql: string, columnTypes: Record<string, LogicalType> = {}) =>
  Effect.exit(
    readAll(query(sql, { columnTypes, batchSize: 700 })).pipe(
      Effect.map(({ schema, batches }) => {
        const columns: Array<Array<Value>> = schema.columns.map(() => [])
        for (const batch of batches) {
          batch.columns.forEach((column, c) => columns[c]!.push(...columnValues(column, schema.columns[c]!.type)))
        }
        return columns
      }),
      Effect.provide(testSource())
    )
  )

const jsonable = (_: string, value: unknown) =>
  typeof value === "bigint" ? `${value}n` : value instanceof Uint8Array ? [...value] : value

const same = async (sql: string, columnTypes: Record<string, LogicalType> = {}) => {
  const text = await Effect.runPromise(textPath(sql, columnTypes))
  const binary = await Effect.runPromise(binaryPath(sql, columnTypes))
  if (Exit.isFailure(text)) {
    const expected = text.cause._tag === "Fail" ? (text.cause.error as { error?: Error }).error ?? text.cause.error : undefined
    const message = (expected as Error | undefined)?.message ?? Cause.pretty(text.cause)
    expect(failureOf(binary)?.message, `${sql}: the binary path must fail as the text path does`).toContain(
      message.replace(/^column /, "column ")
    )
    return message
  }
  expect(Exit.isSuccess(binary), `${sql}: ${Exit.isFailure(binary) ? Cause.pretty(binary.cause) : ""}`).toBe(true)
  if (Exit.isSuccess(binary)) {
    text.value.forEach((expected, c) => {
      const row = expected.findIndex((value, r) => !Object.is(value, binary.value[c]![r]) && JSON.stringify(value, jsonable) !== JSON.stringify(binary.value[c]![r], jsonable))
      expect(binary.value[c]![row], `${sql}: column ${c + 1}, row ${row + 1}`).toEqual(expected[row])
      expect(binary.value[c], `${sql}: column ${c + 1}`).toEqual(expected)
    })
  }
  return text.value
}

describe("binary COPY values = the server's text rendering through the text decoders", () => {
  it("random rows of every type (3000 rows, NULLs everywhere, batches of 700)", async () => {
    const values = await same(`select * from ${T} order by id`, { n: { kind: "decimal", precision: 20, scale: 6 }, a_n: { kind: "list", element: { kind: "decimal", precision: 8, scale: 3 } }, n_free: { kind: "decimal", precision: 40, scale: 12 }, n_neg: { kind: "decimal", precision: 9, scale: 0 } })
    expect(Array.isArray(values) && values[0]!.length).toBe(3000)
  }, 60_000)

  it("overrides: string on every column, int64/decimal/float64 conversions, list<string>", async () => {
    await same(`select * from ${T} order by id`, {
      i2: { kind: "float64" },
      i4: { kind: "decimal", precision: 12, scale: 2 },
      i8: { kind: "decimal", precision: 19, scale: 0 },
      f4: { kind: "float64" },
      n: { kind: "string" },
      ch: { kind: "string" },
      n_free: { kind: "string" },
      n_neg: { kind: "int64" },
      b: { kind: "string" },
      ts: { kind: "string" },
      iv: { kind: "string" },
      jb: { kind: "string" },
      a_i4: { kind: "list", element: { kind: "string" } },
      a_n: { kind: "string" },
      a_iv: { kind: "list", element: { kind: "string" } }
    })
  }, 60_000)

  const extremes: ReadonlyArray<[string, Record<string, LogicalType>?]> = [
    ["select (-9223372036854775808)::int8 as a, 9223372036854775807::int8 as b, (-32768)::int2 as c, 2147483647 as d, 4294967295::oid as e"],
    ["select 0::numeric(5,2) as a, (-0.5)::numeric(5,2) as b, 99999.99::numeric(7,2) as c, 0.0001::numeric(10,4) as d", { a: { kind: "decimal", precision: 5, scale: 2 }, b: { kind: "decimal", precision: 5, scale: 2 }, c: { kind: "decimal", precision: 7, scale: 2 }, d: { kind: "decimal", precision: 10, scale: 4 } }],
    ["select 'NaN'::numeric as a", { a: { kind: "decimal", precision: 10, scale: 2 } }],
    ["select 'Infinity'::numeric as a", { a: { kind: "decimal", precision: 10, scale: 2 } }],
    ["select '-Infinity'::numeric as a", { a: { kind: "decimal", precision: 10, scale: 2 } }],
    ["select 'NaN'::numeric as a", { a: { kind: "int64" } }],
    ["select (repeat('9', 1000) || '.' || repeat('1', 500))::numeric as a", { a: { kind: "decimal", precision: 1500, scale: 500 } }],
    ["select (repeat('9', 1000))::numeric as a", { a: { kind: "decimal", precision: 999, scale: 0 } }],
    ["select ('-' || repeat('1', 999) || '2')::numeric as a", { a: { kind: "decimal", precision: 1000, scale: 0 } }],
    ["select '1e100000'::numeric as a", { a: { kind: "decimal", precision: 20, scale: 0 } }],
    ["select '1e-16000'::numeric as a", { a: { kind: "decimal", precision: 20, scale: 2 } }],
    ["select '1e-16000'::numeric * 0 as a, '-1e-20'::numeric as b", { a: { kind: "decimal", precision: 20, scale: 2 }, b: { kind: "decimal", precision: 30, scale: 25 } }],
    ["select 12.5::numeric as a", { a: { kind: "decimal", precision: 10, scale: 0 } }],
    ["select 1.50::numeric as a, 123456789012345678::numeric as b, 12.000::numeric as c", { a: { kind: "decimal", precision: 10, scale: 1 }, b: { kind: "int64" }, c: { kind: "int64" } }],
    ["select 99999999999999999999::numeric as a", { a: { kind: "int64" } }],
    ["select 1.5::numeric as a", { a: { kind: "int64" } }],
    ["select x::numeric(3,-2) as a from (values (12345), (-99949), (0), (50)) as v(x)", { a: { kind: "decimal", precision: 5, scale: 0 } }],
    ["select x::numeric(3,-2) as a from (values (12345), (-99949)) as v(x)", { a: { kind: "decimal", precision: 4, scale: 0 } }],
    ["select 12345::int4 as a", { a: { kind: "decimal", precision: 4, scale: 0 } }],
    ["select x::date as d from (values ('4713-01-01 BC'), ('0001-01-01'), ('0001-12-31 BC'), ('1969-12-31'), ('9999-12-31'), ('10000-01-01'), ('5874897-12-31')) as v(x)"],
    ["select 'infinity'::date as d"],
    ["select '-infinity'::timestamptz as t"],
    ["select 'infinity'::timestamp as t"],
    ["select x::timestamp as t, x::timestamptz as tz from (values ('4713-01-01 00:00:00 BC'), ('0001-01-01 00:00:00.000001'), ('1969-12-31 23:59:59.999999'), ('1970-01-01 00:00:00'), ('2255-06-05 23:47:34.740991'), ('9999-12-31 23:59:59.999999'), ('10000-01-01 00:00:00'), ('294247-01-10 04:00:54.775807')) as v(x)"],
    ["select '294247-01-10 04:00:54.775808'::timestamp as t"],
    ["select '294276-12-31 23:59:59.999999'::timestamptz as t"],
    ["select x::time as t from (values ('00:00:00'), ('23:59:59.999999'), ('24:00:00'), ('12:00:00.5')) as v(x)"],
    ["select x::interval as i from (values ('0'), ('1 year -1 month'), ('-1 day +1 hour'), ('-0.000001 sec'), ('0.5 sec'), ('-1 min -0.5 sec'), ('178000000 years'), ('-178000000 years'), ('2147483647 days'), ('-2147483648 days'), ('2562047788:00:54.775807'), ('-2562047788:00:54.775807'), ('1 mon 2 days 03:04:05.000006'), ('-1 year -2 mons +3 days -04:05:06.7')) as v(x)"],
    ["select '' as e, ''::bytea as b, '{}'::int4[] as a, array[null]::text[] as n, '{}'::text[] as t, ''::varchar as v, ' '::char(3) as c"],
    ["select null::int2 as a, null::int8 as b, null::numeric(5,1) as c, null::text as d, null::uuid as e, null::date as f, null::timestamptz as g, null::interval as h, null::bool as i, null::jsonb as j, null::int4[] as k, null::inet as l", { c: { kind: "decimal", precision: 5, scale: 1 } }],
    ["select array[null, null]::int8[] as a, array[null, 1, null]::int2[] as b, array[null, 'x', null]::text[] as c, '[0:1]={1,2}'::int4[] as d"],
    ["select '{{1,2},{3,4}}'::int4[] as a"],
    ["select x as t from (values ('ü'), ('日本語テキスト'), ('🎉🎉🎉'), (repeat('é', 10000)), (E'tab\\tnewline\\nquote\"back\\\\slash')) as v(x)"],
    ["select '\\x00ff5c22'::bytea as b, 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid as u, '{\"a\": [1, 2.50, \"x\"]}'::jsonb as j, '{\"b\":1,  \"a\":2}'::json as k"],
    ["select 'NaN'::float4 as a, '-Infinity'::float8 as b, '-0'::float8 as c, 1e-45::float4 as d, 1.7976931348623157e308::float8 as e, 5e-324::float8 as f"],
    ["select '\\x80'::bytea::text::\"char\" as a, ''::\"char\" as b, 'x'::name as c, '192.168.0.1'::inet as d, '10.0.0.0/8'::cidr as e, '08:00:2b:01:02:03'::macaddr as f"]
  ]
  for (const [sql, overrides] of extremes) {
    it(sql.length > 110 ? `${sql.slice(0, 107)}...` : sql, async () => {
      await same(sql, overrides)
    })
  }
})

describe("a value that does not fit, mid-stream", () => {
  it("fails naming the column, cancels the rest of the COPY, and leaves the source usable", async () => {
    const program = Effect.gen(function* () {
      const failed = yield* Effect.exit(
        readAll(query("select i, case when i = 50000 then 'infinity'::timestamptz else now() end as at from generate_series(1, 400000) as i", { batchSize: 1000 }))
      )
      const after = yield* readAll(query("select 1 as one"))
      return { failed, after }
    }).pipe(Effect.provide(testSource()))
    const started = Date.now()
    const { failed, after } = await Effect.runPromise(program)
    expect(failureOf(failed)?.message).toContain('column "at" (timestamptz → timestamptz): value infinity has no representation outside PostgreSQL')
    expect(after.batches[0]?.rowCount).toBe(1)
    expect(Date.now() - started).toBeLessThan(20_000)
    const running = await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'COPY (select i, case when i = 50000%' AND state = 'active'`
    expect(running[0]?.n).toBe(0)
  }, 30_000)
})
