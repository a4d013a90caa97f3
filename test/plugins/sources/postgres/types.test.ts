import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type postgres from "postgres"
import { formatLogicalType } from "../../../../src/core/batch.js"
import { adminSql, query, readAll, rowsOf, testSource } from "./support.js"

// Unique names: test files run in parallel against one database.
const T = "rivet_pgtypes_all"
const MOOD = "rivet_pgtypes_mood"
const PRICE = "rivet_pgtypes_price"

let sql: postgres.Sql

beforeAll(async () => {
  sql = adminSql()
  await sql.unsafe(`
    drop table if exists ${T};
    drop type if exists ${MOOD};
    drop domain if exists ${PRICE};
    create type ${MOOD} as enum ('happy', 'sad', 'o''neil');
    create domain ${PRICE} as numeric(12,2);
    create table ${T} (
      id int4 primary key,
      i2 int2, i4 int4, i8 int8, o oid, f4 float4, f8 float8,
      n numeric(12,2), big numeric(40,10), price ${PRICE},
      t text, vc varchar(20), bp char(5), nm name, ch "char",
      b bool, d date, tm time, ts timestamp, tstz timestamptz,
      u uuid, js json, jb jsonb, by bytea, iv interval, mood ${MOOD}, ip inet,
      a_i4 int4[], a_t text[], a_n numeric(8,3)[], a_by bytea[], a_jb jsonb[], a_ts timestamptz[],
      a_mood ${MOOD}[], a_b bool[], a_d date[], a_u uuid[], a_i8 int8[]
    );
    insert into ${T} values (
      1, -32768, 2147483647, -9223372036854775808, 4294967295, 'NaN', 'Infinity',
      1234567890.12, 123456789012345678901234567890.0123456789, 19.99,
      E'héllo "wörld"\\n\\ttab, comma ✓ 🎉 \\\\ back', 'x', 'ab', 'name', 'z',
      true, '2024-02-29', '23:59:59.999999', '1969-12-31 23:59:59.999999', '2024-01-24 03:33:20.123456+00',
      'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', '{"b": 1,   "a": 12345678901234567890}',
      '{"big": 123456789012345678901234567890, "x": [1.0e5, 0.10]}', '\\x00ff00',
      '1 year 2 months 3 days 04:05:06.5', 'o''neil', '192.168.0.1/24',
      '{1,NULL,-3}', array['a,b', 'c"d', 'e\\f', NULL, 'NULL', '', '{x}', ' sp ', E'line\\nbreak'],
      '{1.5,NULL,-2}', array['\\x00'::bytea, null, '\\x5c22'::bytea, '\\x'::bytea],
      array['{"a": "x,}\\""}'::jsonb, 'null', null], array['2020-01-01 00:00:00.5+00'::timestamptz, '0001-01-01 00:00:00+00 BC'],
      '{happy,NULL,o''neil}', '{t,f,NULL}', '{}', array['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid],
      '{9223372036854775807,NULL}'
    );
    insert into ${T} (id) values (2);
    insert into ${T} (id, i8, f4, f8, n, d, ts, tstz, tm, a_t, by) values
      (3, 9223372036854775807, 1.1, '-Infinity', -0.5, '0044-03-15 BC', '1970-01-01 00:00:00.000001',
       '4713-01-01 00:00:00+00 BC', '00:00:00', '{}', '\\x'),
      (4, 0, '-0', 0.1, 0, '5874897-12-31', '200000-01-01 00:00:00.000001', '1900-06-30 12:34:56.7+00', '12:00:00.5',
       array[NULL]::text[], null);
  `)
})

afterAll(async () => {
  await sql.unsafe(`drop table if exists ${T}; drop type if exists ${MOOD}; drop domain if exists ${PRICE};`)
  await sql.end()
})

const bytes = (...values: Array<number>) => new Uint8Array(values)

describe("postgres source: type mapping", () => {
  it.effect("maps every supported type to its logical type and PostgreSQL name", () =>
    Effect.gen(function* () {
      const { schema } = yield* readAll(query(`select * from ${T} order by id`))
      const types = Object.fromEntries(schema.columns.map((c) => [c.name, [formatLogicalType(c.type), c.sourceType]]))
      expect(types).toEqual({
        id: ["int32", "int4"],
        i2: ["int16", "int2"],
        i4: ["int32", "int4"],
        i8: ["int64", "int8"],
        o: ["int64", "oid"],
        f4: ["float32", "float4"],
        f8: ["float64", "float8"],
        n: ["decimal(12,2)", "numeric(12,2)"],
        big: ["decimal(40,10)", "numeric(40,10)"],
        price: ["decimal(12,2)", PRICE],
        t: ["string", "text"],
        vc: ["string", "varchar"],
        bp: ["string", "bpchar"],
        nm: ["string", "name"],
        ch: ["string", "char"],
        b: ["bool", "bool"],
        d: ["date", "date"],
        tm: ["time", "time"],
        ts: ["timestamp", "timestamp"],
        tstz: ["timestamptz", "timestamptz"],
        u: ["uuid", "uuid"],
        js: ["json", "json"],
        jb: ["json", "jsonb"],
        by: ["bytes", "bytea"],
        iv: ["interval", "interval"],
        mood: ["string", MOOD],
        ip: ["string", "inet"],
        a_i4: ["list<int32>", "int4[]"],
        a_t: ["list<string>", "text[]"],
        a_n: ["list<decimal(8,3)>", "numeric(8,3)[]"],
        a_by: ["list<bytes>", "bytea[]"],
        a_jb: ["list<json>", "jsonb[]"],
        a_ts: ["list<timestamptz>", "timestamptz[]"],
        a_mood: ["list<string>", `${MOOD}[]`],
        a_b: ["list<bool>", "bool[]"],
        a_d: ["list<date>", "date[]"],
        a_u: ["list<uuid>", "uuid[]"],
        a_i8: ["list<int64>", "int8[]"]
      })
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("decodes every value losslessly", () =>
    Effect.gen(function* () {
      const { batches } = yield* readAll(query(`select * from ${T} order by id`))
      const [first, nulls, third, fourth] = rowsOf(batches)
      expect(first).toEqual({
        id: 1,
        i2: -32768,
        i4: 2147483647,
        i8: -9223372036854775808n,
        o: 4294967295n,
        f4: NaN,
        f8: Infinity,
        n: "1234567890.12",
        big: "123456789012345678901234567890.0123456789",
        price: "19.99",
        t: 'héllo "wörld"\n\ttab, comma ✓ 🎉 \\ back',
        vc: "x",
        bp: "ab   ",
        nm: "name",
        ch: "z",
        b: true,
        d: 19782,
        tm: 86_399_999_999n,
        ts: -1n,
        tstz: 1_706_067_200_123_456n,
        u: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
        js: '{"b": 1,   "a": 12345678901234567890}',
        jb: '{"x": [100000, 0.10], "big": 123456789012345678901234567890}',
        by: bytes(0, 255, 0),
        iv: "P1Y2M3DT4H5M6.5S",
        mood: "o'neil",
        ip: "192.168.0.1/24",
        a_i4: [1, null, -3],
        a_t: ["a,b", 'c"d', "e\\f", null, "NULL", "", "{x}", " sp ", "line\nbreak"],
        a_n: ["1.500", null, "-2.000"],
        a_by: [bytes(0), null, bytes(0x5c, 0x22), bytes()],
        a_jb: ['{"a": "x,}\\""}', "null", null],
        a_ts: [1_577_836_800_500_000n, -62_167_219_200_000_000n],
        a_mood: ["happy", null, "o'neil"],
        a_b: [true, false, null],
        a_d: [],
        a_u: ["a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"],
        a_i8: [9223372036854775807n, null]
      })
      expect(Object.entries(nulls!).filter(([name, value]) => name !== "id" && value !== null)).toEqual([])
      expect(third).toMatchObject({
        i8: 9223372036854775807n,
        f4: 1.1,
        f8: -Infinity,
        n: "-0.50",
        d: -735160,
        ts: 1n,
        tstz: -210_863_520_000_000_000n,
        tm: 0n,
        a_t: [],
        by: bytes()
      })
      expect(Object.is(fourth!["f4"], -0)).toBe(true)
      expect(fourth).toMatchObject({
        f8: 0.1,
        n: "0.00",
        d: 2145042905,
        ts: 6_249_223_180_800_000_001n,
        tstz: -2_193_391_503_300_000n,
        tm: 43_200_500_000n,
        a_t: [null],
        by: null
      })
    }).pipe(Effect.provide(testSource()))
  )

  it.effect("agrees with PostgreSQL's own epoch arithmetic across eras", () =>
    Effect.gen(function* () {
      // Timestamps from 4000 BC to 9000 AD with odd microseconds, checked against the server's computation.
      const { batches } = yield* readAll(
        query(
          `select ts, ts::date as d, (ts - timestamp '1970-01-01')::text as span,
                  (extract(epoch from ts) * 1000000)::int8 as micros, ts::date - date '1970-01-01' as days,
                  ts at time zone 'UTC' as tz
           from (select timestamp '4000-01-01 00:00:00 BC' + (i * interval '9876 days 3:17:31.123457') as ts
                 from generate_series(0, 480) i) s`,
          { batchSize: 100 }
        )
      )
      const rows = rowsOf(batches)
      expect(rows.length).toBe(481)
      for (const row of rows) {
        expect(row["ts"]).toBe(row["micros"])
        expect(row["tz"]).toBe(row["micros"])
        expect(row["d"]).toBe(row["days"])
      }
    }).pipe(Effect.provide(testSource()))
  )
})
