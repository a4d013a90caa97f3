/**
 * The type-fidelity fixture: a table with a column of every PostgreSQL type Rivet maps (and an enum of its own), and
 * three rows — every value set, every value NULL, the edges (NaN, -Infinity, extreme integers and dates, empty
 * text, arrays and bytea). test/e2e/all-types.test.ts checks what each format writes of it; the change-data-capture
 * tests (test/e2e/cdc-types.test.ts) that `mode: cdc` writes the same values as a batch export.
 */

/** A value of the text column: quotes, a comma, a newline and a non-ASCII character. */
export const ALL_TYPES_TEXT = 'unicode ✓ "quotes", comma\nnewline'

/** The column list of the fixture table, its enum column of type `mood`. */
export const allTypesColumns = (mood: string): string =>
  `id int4 PRIMARY KEY, i2 int2, i8 int8, f4 float4, f8 float8, num numeric(38,10), t text, ch char(3),
   b bool, d date, tm time, ts timestamp, tstz timestamptz, u uuid, j json, jb jsonb, by bytea,
   iv interval, e ${mood}, arr_i int4[], arr_t text[]`

/** The fixture's three rows (ids 1, 2, 3) as a VALUES list in column order. */
export const ALL_TYPES_ROWS = `
  (1, -32768, -9223372036854775808, 1.5, -0.1, 1234567890123456789012345678.0123456789, $$${ALL_TYPES_TEXT}$$, 'xy',
   true, '1969-07-20', '23:59:59.999999', '1900-01-01 00:00:00.000001', '2024-02-29 12:34:56.123456+00',
   'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', '{"a": 12345678901234567890}', '{"big": 12345678901234567890}',
   '\\x00ff10', '1 year 2 mons 3 days 04:05:06.5', 'sad', '{1,NULL,3}', '{"a,b","c\\"d",NULL}'),
  (2, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
  (3, 0, 9223372036854775807, 'NaN', '-Infinity', -0.0000000001, '', 'abc', false, '2262-04-11', '00:00:00',
   '2262-04-11 23:47:16.854775', '1970-01-01 00:00:00+00', '00000000-0000-0000-0000-000000000000', '[]', 'null',
   '\\x', '-1 days', 'ok', '{}', '{""}')`

/** Creates the enum type `mood` and the fixture `table` (dropping earlier ones) with its three rows. */
export const allTypesSetup = (table: string, mood: string): string => `
  DROP TABLE IF EXISTS ${table};
  DROP TYPE IF EXISTS ${mood};
  CREATE TYPE ${mood} AS ENUM ('sad', 'ok');
  CREATE TABLE ${table} (${allTypesColumns(mood)});
  INSERT INTO ${table} VALUES ${ALL_TYPES_ROWS}`
