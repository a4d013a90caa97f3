import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { validateConfigValue } from "../../src/registry/load-config.js"
import { runCli } from "../support/cli.js"
import { readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"

// `max_file_size` is a ceiling: every part of every format and mode is at most the cap, through the built CLI (so
// CSV, NDJSON and Parquet are encoded on their encoder thread, as in production), the rows add up and `rivet
// validate` passes. The only part over the cap holds a single row larger than the cap, and the run says so. The
// runs are CLI processes that mostly wait (on PostgreSQL, on their encoder threads), so the cases run concurrently.

const TABLE = "size_cap_mixed"
const KIB = 1024
const MIB = 1024 * KIB
/**
 * 16 columns of most kinds: integers, numeric, float, bool, date, timestamptz, text, a low-cardinality text to
 * partition by, jsonb, bytea of hash bytes (incompressible, so Parquet parts stay big), a nullable text, uuid.
 * About 300 bytes a row in zstd Parquet and 660 in CSV: the 8 MiB case reads 34 000 rows for Parquet and 16 000
 * for the text formats, enough for two parts each without writing more than needed.
 */
const ROWS = 34_000
const TEXT_ROWS_8M = 16_000

let sql: postgres.Sql
let root: string

beforeAll(async () => {
  root = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-size-cap-"))
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} AS
    SELECT i::bigint AS id, (i % 1000)::int AS qty, (i % 300)::smallint AS small, (i * 1.37)::numeric(14,2) AS amount,
      (i / 7.0)::float8 AS ratio, (i % 3 = 0) AS flag, date '2024-01-01' + (i % 365) AS day,
      timestamptz '2024-01-01 00:00:00+00' + i * interval '17 seconds' AS at,
      md5(i::text) || md5((i * 7)::text) AS label, (ARRAY['north', 'south', 'east'])[1 + i % 3] AS region,
      jsonb_build_object('k', i, 'tag', md5((i * 3)::text)) AS doc,
      sha256(('a' || i)::bytea) || sha256(('b' || i)::bytea) || sha256(('c' || i)::bytea) ||
        sha256(('d' || i)::bytea) || sha256(('e' || i)::bytea) || sha256(('f' || i)::bytea) AS blob,
      CASE WHEN i % 5 = 0 THEN NULL ELSE 'note ' || i END AS note,
      (i % 100000)::bigint * 1000003 AS big, md5(i::text)::uuid AS uid, (i % 2 = 0)::text AS flag_text
    FROM generate_series(1, ${ROWS}) AS i;
    ALTER TABLE ${TABLE} ADD PRIMARY KEY (id);
  `)
}, 60_000)

afterAll(async () => {
  await sql?.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
  await sql?.end()
  if (root) fs.rmSync(root, { recursive: true, force: true })
})

const MODES = {
  full: "mode: full",
  chunked: "mode: chunked\n    chunk_column: id",
  partitioned: "mode: full\n    partition_by: [region]",
  keyset: "mode: keyset\n    key_columns: [id]"
} as const
type ModeName = keyof typeof MODES

interface Case {
  readonly name: string
  readonly format: "parquet" | "csv" | "ndjson"
  readonly mode: ModeName
  readonly gzip?: boolean
}

/** The cases run at one cap: the three formats in the three modes, plus extras. */
const matrix = (extra: ReadonlyArray<Case>): ReadonlyArray<Case> => [
  ...(["parquet", "csv", "ndjson"] as const).flatMap((format) =>
    (["full", "chunked", "partitioned"] as const).map((mode) => ({ name: `${format}_${mode}`, format, mode }))
  ),
  ...extra
]

/**
 * A config of one export per case, each reading the table's first `rowsOf(case)` rows (chunks: a third of them,
 * pages: half), or `query` when given.
 */
const configOf = (cases: ReadonlyArray<Case>, cap: string, rowsOf: (c: Case) => number, query?: string) => {
  const exports = cases.map((c) => {
    const rows = rowsOf(c)
    return `  - name: ${c.name}
    query: "${query ?? `SELECT * FROM ${TABLE} WHERE id <= ${rows}`}"
    format: ${c.format}
${c.gzip ? "    compression: gzip\n" : ""}    max_file_size: ${cap}
    ${MODES[c.mode]}
${c.mode === "chunked" ? `    chunk_size: ${Math.ceil(rows / 3)}\n` : c.mode === "keyset" ? `    page_size: ${Math.ceil(rows / 2)}\n` : ""}    destination: { type: local, path: out/${c.name} }`
  })
  return `source: { type: postgres, url: "${testPgUrl()}" }\nexports:\n${exports.join("\n")}\n`
}

/** Every data file under an export's destination (partition directories included), with its size. */
const dataFiles = (dir: string): Array<{ readonly name: string; readonly size: number }> =>
  (fs.readdirSync(dir, { recursive: true }) as Array<string>)
    .filter((name) => !name.startsWith("_manifests") && !/(^|\/)(manifest\.json|_SUCCESS)$/.test(name))
    .map((name) => ({ name, size: fs.statSync(path.join(dir, name)).size }))
    .filter((file) => fs.statSync(path.join(dir, file.name)).isFile())

const runCase = async (label: string, cases: ReadonlyArray<Case>, cap: string, rowsOf: (c: Case) => number, query?: string) => {
  const dir = path.join(root, label)
  fs.mkdirSync(dir, { recursive: true })
  const config = path.join(dir, "rivet.yaml")
  fs.writeFileSync(config, configOf(cases, cap, rowsOf, query))
  const run = await runCli(["run", "-c", config, "--json"])
  expect(run.code, run.stderr).toBe(0)
  const validated = await runCli(["validate", "-c", config])
  expect(validated.code, validated.stdout + validated.stderr).toBe(0)
  expect(validated.stdout).toContain(`${cases.length} exports validated: ${cases.length} ok, 0 failed`)
  return { dir, run }
}

/** Every part of each case is at most `capBytes`, on disk and in the manifest, and the parts hold `rows` rows. */
const expectCapped = (dir: string, cases: ReadonlyArray<Case>, capBytes: number, rowsOf: (c: Case) => number, minParts: number) => {
  for (const c of cases) {
    const rows = rowsOf(c)
    const out = path.join(dir, "out", c.name)
    const manifest = readManifest(out)
    const files = dataFiles(out)
    const largest = Math.max(...files.map((file) => file.size))
    expect({ case: c.name, largest: largest <= capBytes }).toEqual({ case: c.name, largest: true })
    expect(manifest.parts.every((part) => part.size_bytes <= capBytes)).toBe(true)
    expect({ case: c.name, rows: manifest.parts.reduce((sum, part) => sum + part.rows, 0) }).toEqual({ case: c.name, rows })
    expect(files.length).toBe(manifest.parts.length)
    expect({ case: c.name, enough: manifest.parts.length >= minParts }).toEqual({ case: c.name, enough: true })
  }
}

describe("max_file_size is a ceiling", () => {
  it.concurrent("64 KiB: Parquet, CSV, NDJSON × full, chunked, partitioned (and gzip CSV) — every part at most 64 KiB", async () => {
    const rows = 3_000
    const cases = matrix([{ name: "csv_gzip_full", format: "csv", mode: "full", gzip: true }])
    const { dir, run } = await runCase("cap64k", cases, "64KiB", () => rows)
    expectCapped(dir, cases, 64 * KIB, () => rows, 3)
    expect(run.stderr).not.toContain("is larger than max_file_size")
  }, 180_000)

  it.concurrent("1 MiB: the matrix plus keyset (Parquet) — every part at most 1 MiB", async () => {
    const rows = 8_000
    const cases = matrix([{ name: "parquet_keyset", format: "parquet", mode: "keyset" }])
    const { dir } = await runCase("cap1m", cases, "1MiB", () => rows)
    expectCapped(dir, cases, MIB, () => rows, 2)
  }, 180_000)

  it.concurrent("8 MiB: the matrix — at least two parts each, every part at most 8 MiB", async () => {
    const cases = matrix([])
    const rowsOf = (c: Case) => (c.format === "parquet" ? ROWS : TEXT_ROWS_8M)
    const { dir } = await runCase("cap8m", cases, "8MiB", rowsOf)
    expectCapped(dir, cases, 8 * MIB, rowsOf, 2)
  }, 300_000)

  it.concurrent("a single row larger than the cap is written alone and reported by key (or number); every other part is capped", async () => {
    // Row 777's body is ~190 KiB of hex digits (about 95 KiB once compressed, by zstd or gzip): larger than the
    // 64 KiB cap on its own.
    const query =
      "SELECT i AS id, CASE WHEN i = 777 THEN (SELECT string_agg(md5(g::text), '') FROM generate_series(1, 6000) AS g) " +
      "ELSE md5(i::text) END AS body FROM generate_series(1, 3000) AS i"
    const cases: ReadonlyArray<Case> = [
      { name: "big_parquet_chunked", format: "parquet", mode: "chunked" },
      { name: "big_ndjson_gzip_full", format: "ndjson", mode: "full", gzip: true }
    ]
    const { dir, run } = await runCase("oversized", cases, "64KiB", () => 3000, query)
    const warnings = run.stderr
      .split("\n")
      .filter((line) => line.startsWith("{"))
      .map((line) => JSON.parse(line) as { event: string; export?: string; message?: string })
      .filter((event) => event.event === "warning" && event.message?.includes("is larger than max_file_size"))
    expect(warnings.map((event) => event.export).sort()).toEqual(["big_ndjson_gzip_full", "big_parquet_chunked"])
    expect(warnings.find((event) => event.export === "big_parquet_chunked")!.message).toContain("key id=777")
    expect(warnings.find((event) => event.export === "big_ndjson_gzip_full")!.message).toContain("row 777 of the export's rows")
    for (const c of cases) {
      const manifest = readManifest(path.join(dir, "out", c.name))
      const over = manifest.parts.filter((part) => part.size_bytes > 64 * KIB)
      expect({ case: c.name, over: over.map((part) => part.rows) }).toEqual({ case: c.name, over: [1] })
      expect(manifest.parts.reduce((sum, part) => sum + part.rows, 0)).toBe(3000)
    }
  }, 180_000)

  it("refuses a cap below 64 KiB, naming the config path", async () => {
    const decoded = await Effect.runPromise(
      Effect.provide(
        validateConfigValue(
          {
            source: { type: "postgres", url: "postgres://postgres@127.0.0.1:1/none" },
            exports: [
              { name: "a", query: "select 1", max_file_size: "32KiB", destination: { type: "local", path: "a" } },
              { name: "b", query: "select 1", max_file_size: "64KiB", destination: { type: "local", path: "b" } }
            ]
          },
          "/tmp",
          "test.yaml"
        ),
        NodeFileSystem.layer
      )
    )
    const errors = Either.isLeft(decoded) ? decoded.left : []
    expect(errors.map((error) => error.path)).toEqual(["exports[0].max_file_size"])
    expect(errors[0]?.message).toContain("below the smallest cap Rivet keeps (64 KiB)")
  })
})
