import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExports } from "../../src/api.js"
import type { Manifest } from "../../src/core/manifest.js"
import { allTypesSetup } from "../support/all-types.js"
import { testPgUrl } from "../support/pg.js"
import { dropSlots, logicalReplication } from "../support/replication.js"
import { duckRows } from "./partition-support.js"

// Type fidelity of mode: cdc. The type-fidelity fixture (test/support/all-types.ts, the table all-types.test.ts checks
// every format with) is exported to Parquet by mode: full and by mode: cdc — the first run's snapshot rows, then a
// run of changes that inserts rows with the fixture's values and updates them to other rows' values — and every
// value of every column, and each column's Parquet type, must be what the batch export writes. The change stream is
// read in pgoutput's binary format when every column has a binary reader (the fixture as it is) and as text
// otherwise (the fixture with an inet column, which the batch reader has PostgreSQL render): both are covered. Every
// slot, publication, table and type made here is dropped at the end.

// Not "rivet_e2e_cdc…": cdc-postgres.test.ts, running at the same time in another process, drops every slot under
// that prefix.
const PREFIX = "rivet_e2e_ctypes"
const unavailable = await logicalReplication(testPgUrl())
if (unavailable !== undefined) process.stderr.write(`SKIPPED ${path.basename(import.meta.filename)}: no logical replication: ${unavailable}\n`)

let sql: postgres.Sql
const dirs: Array<string> = []
const tables = { binary: `${PREFIX}_binary`, text: `${PREFIX}_text` }

beforeAll(async () => {
  if (unavailable !== undefined) return
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await dropSlots(testPgUrl(), PREFIX)
})

afterAll(async () => {
  if (unavailable !== undefined) return
  try {
    await dropSlots(testPgUrl(), PREFIX)
  } finally {
    await sql.unsafe(`DROP TABLE IF EXISTS ${tables.binary}, ${tables.text}; DROP TYPE IF EXISTS ${tables.binary}_mood, ${tables.text}_mood`)
    await sql.end()
    for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
  }
})

const run = async (table: string, mode: Record<string, unknown>, out: string) => {
  const dir = path.dirname(out)
  const [result] = await runExports(
    {
      source: { type: "postgres", url: testPgUrl() },
      exports: [{ name: `${table}_${String(mode["mode"])}`, table, format: "parquet", destination: { type: "local", path: path.basename(out) }, ...mode }]
    } as never,
    { configDir: dir }
  )
  expect(result!.status).toBe("success")
  return result!
}

const quoteList = (files: ReadonlyArray<string>) => `[${files.map((file) => `'${file}'`).join(", ")}]`

/** The data files the kept manifests under `out` list, run after run. */
const publishedFiles = (out: string): Array<string> =>
  fs
    .readdirSync(path.join(out, "_manifests"))
    .sort()
    .flatMap((name) => (JSON.parse(fs.readFileSync(path.join(out, "_manifests", name), "utf8")) as Manifest).parts.map((part) => path.join(out, part.path)))

/**
 * Each column's Parquet type as DuckDB reads the file's schema (physical type, logical and converted type, precision,
 * scale, repetition), from the table's first column (`id`) on: the change columns, which come first, left out.
 */
const parquetTypes = async (file: string) => {
  const rows = await duckRows(
    `SELECT name, type, converted_type, logical_type::varchar AS logical_type, scale, precision, repetition_type FROM parquet_schema('${file}')`
  )
  return rows.slice(rows.findIndex((row) => row["name"] === "id")).map((row) => JSON.stringify(row))
}

/** Every row of `files` with every column as DuckDB's text of the value read from Parquet (exact: no JS conversion). */
const textRows = (files: ReadonlyArray<string>, where = "true") =>
  duckRows(
    `SELECT * EXCLUDE (filename, file_row_number) FROM (
       SELECT COLUMNS(*)::VARCHAR FROM read_parquet(${quoteList(files)}, filename = true, file_row_number = true)
       WHERE ${where} ORDER BY list_position(${quoteList(files)}, filename), file_row_number)`
  )

/** A row without its change columns and its id: the values the fixture row carries. */
const valuesOf = (row: Record<string, unknown>) => Object.fromEntries(Object.entries(row).filter(([name]) => !name.startsWith("__") && name !== "id"))

describe.skipIf(unavailable !== undefined)("mode: cdc writes the values mode: full writes, for every type of the fixture", () => {
  it.each([
    ["binary", "every column has a binary reader: pgoutput sends binary values", ""],
    ["text", "an inet column (rendered by PostgreSQL in batch reads): pgoutput sends text values", ", addr inet"]
  ] as const)("%s: %s", async (kind, _what, extraColumn) => {
    const table = tables[kind]
    await sql.unsafe(allTypesSetup(table, `${table}_mood`))
    if (extraColumn !== "") {
      await sql.unsafe(`ALTER TABLE ${table} ADD COLUMN addr inet; UPDATE ${table} SET addr = CASE id WHEN 1 THEN inet '2001:db8::1/64' WHEN 3 THEN inet '10.0.0.1' END`)
    }
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cdc-types-"))
    dirs.push(dir)
    const cdcOut = path.join(dir, "cdc")
    const cdc = { mode: "cdc", cdc: { slot: table, publication: table } }

    // The snapshot: rows 1, 2, 3.
    const first = await run(table, cdc, cdcOut)
    expect(first.rows).toBe(3)
    // Changes: rows 101, 102, 103 inserted with the values of rows 3, 1, 2, then (another transaction) updated to
    // those of rows 1, 2, 3: every value of the fixture goes through an insert and an update, NULLs and edges to and fro.
    const columns = (await sql.unsafe(`SELECT attname::text AS name FROM pg_attribute WHERE attrelid = '${table}'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`))
      .map((row) => `"${String(row["name"])}"`)
      .filter((name) => name !== '"id"')
    await sql.unsafe(`INSERT INTO ${table} SELECT 100 + (id % 3) + 1, ${columns.join(", ")} FROM ${table} WHERE id <= 3 ORDER BY 1`)
    await sql.unsafe(
      `UPDATE ${table} AS t SET (${columns.join(", ")}) = (SELECT ${columns.map((name) => `s.${name}`).join(", ")} FROM ${table} s WHERE s.id = t.id - 100) WHERE t.id > 100`
    )
    const second = await run(table, cdc, cdcOut)
    expect(second.rows).toBe(6)

    // The batch export of the table as it is now: rows 1, 2, 3 and 101, 102, 103 (= 1, 2, 3).
    const fullOut = path.join(dir, "full")
    await run(table, { mode: "full" }, fullOut)
    const fullFiles = publishedFiles(fullOut)
    expect(fullFiles).toHaveLength(1)
    const full = new Map((await textRows(fullFiles)).map((row) => [Number(row["id"]), row]))
    expect([...full.keys()].sort((a, b) => a - b)).toEqual([1, 2, 3, 101, 102, 103])

    const cdcFiles = publishedFiles(cdcOut)
    const rank = { snapshot: 0, insert: 1, update: 2 } as Record<string, number>
    const changes = (await textRows(cdcFiles)).sort((a, b) => rank[String(a["__op"])]! - rank[String(b["__op"])]! || Number(a["id"]) - Number(b["id"]))
    const expected = [
      ...[1, 2, 3].map((id) => ({ op: "snapshot", id, like: id })),
      ...[101, 102, 103].map((id) => ({ op: "insert", id, like: ((id - 99) % 3) + 1 })),
      ...[101, 102, 103].map((id) => ({ op: "update", id, like: id - 100 }))
    ]
    expect(changes.map((row) => `${String(row["__op"])} ${String(row["id"])}`)).toEqual(expected.map(({ op, id }) => `${op} ${id}`))
    for (const [i, { op, id, like }] of expected.entries()) {
      expect(valuesOf(changes[i]!), `${op} of row ${id} (the values of row ${like})`).toEqual(valuesOf(full.get(like)!))
    }
    // No TOASTed value went missing: every change carried its whole row.
    expect(changes.map((row) => row["__unchanged"] ?? null)).toEqual(expected.map(() => null))
    // The same Parquet column types, in the snapshot's part and in the changes' part.
    const fullTypes = await parquetTypes(fullFiles[0]!)
    for (const file of cdcFiles) expect(await parquetTypes(file), path.basename(file)).toEqual(fullTypes)
  }, 60_000)
})
