import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExportsEffect } from "../../src/api.js"
import { testPgUrl } from "../support/pg.js"
import { readManifest } from "../support/output.js"
import { untyped } from "../support/config.js"

// mode: chunked on PostgreSQL at the edges of the key span: spans that are exact multiples of chunk_size (the last
// chunk holds the maximum key alone), a table of one row, an empty table. Every row exactly once, and the planned
// ranges reach the maximum key.

let sql: postgres.Sql
const dirs: Array<string> = []

const TABLES = ["chunk_edge_multiple", "chunk_edge_one", "chunk_edge_empty", "chunk_edge_negative"]

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ${TABLES.join(", ")};
    CREATE TABLE chunk_edge_multiple (id int PRIMARY KEY, note text);
    INSERT INTO chunk_edge_multiple SELECT i, 'n' || i FROM generate_series(1, 201) AS i;
    CREATE TABLE chunk_edge_one (id bigint PRIMARY KEY, note text);
    INSERT INTO chunk_edge_one VALUES (42, 'only');
    CREATE TABLE chunk_edge_empty (id int PRIMARY KEY, note text);
    CREATE TABLE chunk_edge_negative (id int PRIMARY KEY, note text);
    INSERT INTO chunk_edge_negative SELECT i, 'n' || i FROM generate_series(-50, 50) AS i;
  `)
}, 60_000)

afterAll(async () => {
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLES.join(", ")}`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const exportChunked = async (table: string, chunkSize: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-chunk-edges-"))
  dirs.push(dir)
  const [outcome] = await Effect.runPromise(
    runExportsEffect(
      untyped({
        source: { type: "postgres", url: testPgUrl() },
        exports: [{ name: "t", table, mode: "chunked", chunk_size: chunkSize, parallel: 2, format: "csv", destination: { type: "local", path: "out" } }]
      }),
      { configDir: dir }
    )
  )
  if (outcome?._tag !== "success") throw new Error(`export failed: ${outcome?.error.message}`)
  const out = path.join(dir, "out")
  const exported = readManifest(out).parts.flatMap((part) =>
    fs
      .readFileSync(path.join(out, part.path), "utf8")
      .split("\n")
      .slice(1)
      .filter((line) => line.length > 0)
      .map((line) => Number(line.split(",")[0]))
  )
  return { rows: outcome.result.rows, exported: exported.sort((a, b) => a - b) }
}

const idsOf = async (table: string) =>
  (await sql.unsafe<Array<{ id: string | number }>>(`SELECT id FROM ${table} ORDER BY id`)).map((row) => Number(row.id))

describe("chunked mode at the edges of the key span (PostgreSQL)", () => {
  it.each([
    ["span 200 = 20 × chunk_size 10: the last chunk is the maximum key alone", "chunk_edge_multiple", 10],
    ["span 200 = chunk_size 200: two chunks, the second one key", "chunk_edge_multiple", 200],
    ["span 200 = 4 × chunk_size 50", "chunk_edge_multiple", 50],
    ["negative to positive keys, span 100 = 4 × 25", "chunk_edge_negative", 25],
    ["a table of one row", "chunk_edge_one", 1000],
    ["a table of one row, chunk_size 1", "chunk_edge_one", 1]
  ])("%s: every row exactly once", async (_label, table, chunkSize) => {
    const expected = await idsOf(table)
    const result = await exportChunked(table, chunkSize)
    expect(result.exported).toEqual(expected)
    expect(result.rows).toBe(expected.length)
  }, 60_000)

  it("an empty table: a successful run with no rows", async () => {
    const result = await exportChunked("chunk_edge_empty", 10)
    expect(result).toEqual({ rows: 0, exported: [] })
  })
})
