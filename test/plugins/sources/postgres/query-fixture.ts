import { afterAll, beforeAll } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type postgres from "postgres"
import type { RowFilter, SourceQuery } from "../../../../src/core/plugin.js"
import { adminSql, query, readAll, rowsOf } from "./support.js"

/** Table names of the filter/bounds/describe fixture; `prefix` keeps parallel test files apart. */
export const fixtureNames = (prefix: string) => ({
  T: `${prefix}_t`,
  CK: `${prefix}_ck`,
  NOPK: `${prefix}_nopk`,
  EMPTY: `${prefix}_empty`,
  BIG: `${prefix}_big`,
  SCHEMA: `${prefix}_schema`
})

type Names = ReturnType<typeof fixtureNames>

const dropSql = ({ T, CK, NOPK, EMPTY, BIG, SCHEMA }: Names) =>
  `drop table if exists ${T}, ${CK}, ${NOPK}, ${EMPTY}, ${BIG}; drop schema if exists ${SCHEMA} cascade;`

/**
 * T: int8 ids with gaps (one beyond int4), a nullable int, text, timestamps a microsecond apart, dates, numeric,
 * uuid, bool. CK: composite key (b, a). NOPK: no key. EMPTY: no rows. BIG: 20k rows, analyzed.
 * SCHEMA.keyed, and SCHEMA.T shadowing the public T.
 */
export const createFixture = async (sql: postgres.Sql, names: Names): Promise<void> => {
  const { T, CK, NOPK, EMPTY, BIG, SCHEMA } = names
  await sql.unsafe(dropSql(names))
  await sql.unsafe(`
    create table ${T} (
      id int8 primary key, n int4, label text, at timestamptz, day date, ts timestamp,
      amount numeric(10,2), u uuid, flag bool
    );
    insert into ${T} values
      (1, 10, 'alpha', '2026-01-01 00:00:00.000001+00', '2026-01-01', '2026-01-01 00:00:00.000001', 1.50,
        '00000000-0000-0000-0000-000000000001', true),
      (2, null, 'beta', '2026-01-02 03:04:05.123456+00', '2026-01-02', '2026-01-02 03:04:05.123456', 2.00,
        '00000000-0000-0000-0000-000000000002', false),
      (5, 30, 'o''hara', '2026-01-02 03:04:05.123457+00', '2026-01-02', '2026-01-02 03:04:05.123457', 2.01,
        '00000000-0000-0000-0000-000000000005', true),
      (10, null, 'delta', '2026-02-01 00:00:00+00', '2026-02-01', '2026-02-01 00:00:00', 100.00,
        '00000000-0000-0000-0000-000000000010', false),
      (11, 5, 'epsilon', '2026-03-01 12:00:00+00', '2026-03-01', '2026-03-01 12:00:00', 0.99,
        '00000000-0000-0000-0000-000000000011', true),
      (3000000000, 7, 'zeta', '2027-01-01 00:00:00+00', '2027-01-01', '2027-01-01 00:00:00', 5.00,
        'ffffffff-0000-0000-0000-000000000000', null);
    -- the key's order (b, a) differs from the column order
    create table ${CK} (a text, b int4, c date, primary key (b, a));
    insert into ${CK} select chr(97 + (i % 3)), i / 3, date '2026-01-01' + i from generate_series(0, 16) i;
    create table ${NOPK} (v int4);
    create table ${EMPTY} (id int8, at timestamptz);
    create table ${BIG} (id int8 primary key, v int4);
    insert into ${BIG} select i, i % 7 from generate_series(1, 20000) i;
    analyze ${BIG};
    create schema ${SCHEMA};
    create table ${SCHEMA}.keyed (k int8 primary key, v text);
    create table ${SCHEMA}.${T} (other int4 primary key);
  `)
}

export const dropFixture = (sql: postgres.Sql, names: Names): Promise<unknown> => sql.unsafe(dropSql(names))

/** `SELECT * FROM "<table>"` as an export with a `table:` shortcut. */
export const base = (table: string, extra: Partial<SourceQuery> = {}): SourceQuery => ({
  ...query(""),
  base: { _tag: "Table", name: table },
  ...extra
})

/** The fixture table filtered and ordered by id. */
export const filtered = (table: string, ...filters: ReadonlyArray<RowFilter>): SourceQuery =>
  base(table, { where: filters, orderBy: ["id"] })

/**
 * The fixture under `prefix` for one test file: created before its tests, dropped after them. `admin()` is the
 * connection that made it; `ids` reads a query's `id` column as text; `where` filters the T table.
 */
export const useQueryFixture = (prefix: string) => {
  const names = fixtureNames(prefix)
  let sql: postgres.Sql | undefined
  beforeAll(async () => {
    sql = adminSql()
    await createFixture(sql, names)
  })
  afterAll(async () => {
    if (sql === undefined) return
    await dropFixture(sql, names)
    await sql.end()
  })
  return {
    names,
    admin: (): postgres.Sql => sql!,
    ids: (q: SourceQuery) => Effect.map(readAll(q), ({ batches }) => rowsOf(batches).map((row) => String(row["id"]))),
    where: (...filters: ReadonlyArray<RowFilter>) => filtered(names.T, ...filters)
  }
}
