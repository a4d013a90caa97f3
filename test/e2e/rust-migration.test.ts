import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExportsEffect } from "../../src/api.js"
import type { BatchSchema, Value } from "../../src/core/batch.js"
import type { ExportRun } from "../../src/engine/run.js"
import { metadataOf, readRows } from "../plugins/formats/parquet/read-back.js"
import { runCli, writeConfig } from "../support/cli.js"
import { filesUnder, ndjsonRows, readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"
import { referenceHash } from "../support/row-hash-reference.js"

// What a config migrated from the Rust rivet keeps working with: meta columns, a coalesced cursor, and the
// scheduling keys reported (not refused) by run and plan; plan resolving column types in every mode.

let sql: postgres.Sql
const dirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-migrate-"))
  dirs.push(dir)
  return dir
}

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 2, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS mig_meta, mig_coalesce, mig_plan;
    CREATE TABLE mig_meta (id int PRIMARY KEY, name text, amount numeric(10,2), at timestamptz, flag boolean, tags int[]);
    INSERT INTO mig_meta VALUES
      (1, 'a', 1.50, '2026-01-01 00:00:00+00', true, '{1,NULL}'),
      (2, NULL, -0.25, NULL, false, '{}'),
      (3, 'ü', 100.00, '2026-06-30 12:34:56.789012+00', NULL, NULL);
    INSERT INTO mig_meta SELECT i, 'n' || i, i / 4.0, timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute', i % 2 = 0, ARRAY[i]
      FROM generate_series(4, 2000) AS i;
    CREATE TABLE mig_coalesce (id int PRIMARY KEY, updated_at timestamptz, created_at timestamptz NOT NULL, note text);
    INSERT INTO mig_coalesce VALUES
      (1, '2026-03-01 00:00:00+00', '2026-01-01 00:00:00+00', 'updated'),
      (2, NULL, '2026-02-01 00:00:00+00', 'never updated'),
      (3, '2026-02-15 00:00:00+00', '2026-01-15 00:00:00+00', 'updated');
    CREATE TABLE mig_plan (id int PRIMARY KEY, amount numeric, name text);
    INSERT INTO mig_plan VALUES (1, 1.5, 'x');
  `)
}, 120_000)

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS mig_meta, mig_coalesce, mig_plan")
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const run = (exports: ReadonlyArray<Record<string, unknown>>, configDir = tempDir()) =>
  Effect.runPromise(runExportsEffect({ source: { type: "postgres", url: testPgUrl() }, exports: exports as never }, { configDir }))

const succeeded = (outcome: ExportRun | undefined) => {
  if (outcome?._tag !== "success") throw new Error(`the export failed: ${outcome?._tag === "failure" ? outcome.error.message : "no outcome"}`)
  return outcome.result
}

const micros = (iso: string, extraMicros = 0) => BigInt(Date.parse(iso)) * 1000n + BigInt(extraMicros)

// mig_meta's first rows as the PostgreSQL source gives them (docs/sources/postgres.md), in the batch representation.
const META_SCHEMA: BatchSchema = {
  columns: [
    { name: "id", type: { kind: "int32" } },
    { name: "name", type: { kind: "string" } },
    { name: "amount", type: { kind: "decimal", precision: 10, scale: 2 } },
    { name: "at", type: { kind: "timestamptz" } },
    { name: "flag", type: { kind: "bool" } },
    { name: "tags", type: { kind: "list", element: { kind: "int32" } } }
  ]
}
const FIRST_ROWS: ReadonlyArray<ReadonlyArray<Value>> = [
  [1, "a", "1.50", micros("2026-01-01T00:00:00Z"), true, [1, null]],
  [2, null, "-0.25", null, false, []],
  [3, "ü", "100.00", micros("2026-06-30T12:34:56.789Z", 12), null, null]
]
const EXPECTED_HASHES = FIRST_ROWS.map((row) => String(referenceHash(META_SCHEMA, row)))

const parquetRows = async (dir: string) => {
  const manifest = readManifest(dir)
  const rows = []
  for (const part of manifest.parts) {
    const bytes = fs.readFileSync(path.join(dir, part.path))
    rows.push(...(await readRows(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))))
  }
  return rows
}

describe("meta_columns", () => {
  it("appends _rivet_exported_at (the run's start) and _rivet_row_hash (as documented) in Parquet, CSV and NDJSON alike", async () => {
    const dir = tempDir()
    const query = "SELECT * FROM mig_meta WHERE id <= 3 ORDER BY id"
    const outcomes = await run(
      ["parquet", "csv", "ndjson"].map((format) => ({
        name: `meta_${format}`,
        query,
        format,
        meta_columns: ["exported_at", "row_hash"],
        destination: { type: "local", path: path.join(dir, format) }
      }))
    )
    outcomes.forEach(succeeded)
    const expectedSchema = [
      ...META_SCHEMA.columns.map((column) => column.name),
      "_rivet_exported_at",
      "_rivet_row_hash"
    ]
    for (const format of ["parquet", "csv", "ndjson"]) {
      const manifest = readManifest(path.join(dir, format))
      expect(manifest.schema.map((column) => column.name)).toEqual(expectedSchema)
      expect(manifest.schema.slice(-2)).toEqual([
        { name: "_rivet_exported_at", type: "timestamptz" },
        { name: "_rivet_row_hash", type: "int64" }
      ])
    }

    const parquetDir = path.join(dir, "parquet")
    const fromParquet = await parquetRows(parquetDir)
    expect(fromParquet.map((row) => String(row["_rivet_row_hash"]))).toEqual(EXPECTED_HASHES)
    const startedAt = micros(readManifest(parquetDir).started_at)
    expect(fromParquet.map((row) => row["_rivet_exported_at"])).toEqual([startedAt, startedAt, startedAt])
    const part = fs.readFileSync(path.join(parquetDir, readManifest(parquetDir).parts[0]!.path))
    const elements = metadataOf(part.buffer.slice(part.byteOffset, part.byteOffset + part.byteLength)).schema
    const hashElement = elements.find((element) => element.name === "_rivet_row_hash")
    const atElement = elements.find((element) => element.name === "_rivet_exported_at")
    expect(hashElement?.type).toBe("INT64")
    expect(atElement?.type).toBe("INT64")
    expect(atElement?.logical_type).toMatchObject({ type: "TIMESTAMP", isAdjustedToUTC: true, unit: "MICROS" })

    const csvDir = path.join(dir, "csv")
    const csvLines = fs.readFileSync(path.join(csvDir, readManifest(csvDir).parts[0]!.path), "utf8").trimEnd().split("\n")
    expect(csvLines[0]).toBe(expectedSchema.join(","))
    expect(csvLines.slice(1).map((line) => line.split(",").at(-1))).toEqual(EXPECTED_HASHES)
    const csvStarted = readManifest(csvDir).started_at.replace(/Z$/, "000Z")
    expect(csvLines.slice(1).map((line) => line.split(",").at(-2))).toEqual([csvStarted, csvStarted, csvStarted])

    const ndjson = ndjsonRows(path.join(dir, "ndjson"))
    expect(ndjson.map((row) => row["_rivet_row_hash"])).toEqual(EXPECTED_HASHES)
    expect(Object.keys(ndjson[0]!)).toEqual(expectedSchema)
  })

  it("chunked, some chunks in a worker thread: one _rivet_exported_at for the whole run, the same row hashes as a full export", async () => {
    // Slowed rows (2 ms each, 250 ms a chunk) leave the worker thread time to start and take chunks.
    const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: meta_chunked
    query: "SELECT m.* FROM mig_meta m, LATERAL (SELECT pg_sleep(0.002)) AS slow"
    mode: chunked
    chunk_column: id
    chunk_size: 125
    parallel: 2
    meta_columns: { exported_at: true, row_hash: true }
    destination: { type: local, path: out/chunked }
  - name: meta_full
    table: mig_meta
    meta_columns: [row_hash]
    destination: { type: local, path: out/full }
`)
    dirs.push(path.dirname(file))
    const result = await runCli(["run", "-c", file], { env: { RIVET_LANES: "1" } })
    expect(result.code, result.stderr).toBe(0)
    const inWorker = /chunks ran in 1 worker thread \((\d+)\)/.exec(result.stderr)?.[1]
    expect(Number(inWorker ?? 0), result.stderr).toBeGreaterThan(0)
    const out = path.join(path.dirname(file), "out")
    const chunkedRows = await parquetRows(path.join(out, "chunked"))
    expect(chunkedRows).toHaveLength(2000)
    const startedAt = micros(readManifest(path.join(out, "chunked")).started_at)
    expect(new Set(chunkedRows.map((row) => row["_rivet_exported_at"]))).toEqual(new Set([startedAt]))
    const hashById = (rows: ReadonlyArray<Record<string, unknown>>) =>
      new Map(rows.map((row) => [row["id"], row["_rivet_row_hash"]]))
    const fullRows = await parquetRows(path.join(out, "full"))
    expect(Object.keys(fullRows[0]!).at(-1)).toBe("_rivet_row_hash")
    expect(hashById(chunkedRows)).toEqual(hashById(fullRows))
    expect([1, 2, 3].map((id) => String(hashById(fullRows).get(id)))).toEqual(EXPECTED_HASHES)
  }, 60_000)

  it("refuses a result column that has a meta column's name, before anything is written", async () => {
    const dir = tempDir()
    const outcomes = await run([
      {
        name: "clash_full",
        query: "SELECT id, 1::bigint AS _rivet_row_hash FROM mig_meta",
        meta_columns: ["row_hash"],
        destination: { type: "local", path: path.join(dir, "full") }
      },
      {
        name: "clash_chunked",
        query: "SELECT id, now() AS _rivet_exported_at FROM mig_meta",
        mode: "chunked",
        chunk_column: "id",
        meta_columns: ["exported_at"],
        destination: { type: "local", path: path.join(dir, "chunked") }
      }
    ])
    for (const [outcome, name, column] of [
      [outcomes[0], "clash_full", "_rivet_row_hash"],
      [outcomes[1], "clash_chunked", "_rivet_exported_at"]
    ] as const) {
      if (outcome?._tag !== "failure") throw new Error(`${name} ran although its result has a column named ${column}`)
      expect(outcome.error._tag).toBe("ConfigError")
      expect(outcome.error.message).toBe(
        `the export's result already has a column '${column}', the name of the ${column.slice(7)} meta column`
      )
      expect(outcome.error.hint).toMatch(/rename that column in the query/)
    }
    expect(filesUnder(dir)).toEqual([])
  })
})

describe("cursor_fallback_column", () => {
  it("reads and stores COALESCE(updated_at, created_at), adds no column, and picks up a never-updated row on the next run", async () => {
    const configDir = tempDir()
    const spec = {
      name: "coalesced",
      table: "mig_coalesce",
      mode: "incremental",
      cursor_column: "updated_at",
      cursor_fallback_column: "created_at",
      incremental_cursor_mode: "coalesce",
      format: "ndjson",
      destination: { type: "local", path: "out" }
    }
    const out = path.join(configDir, "out")
    const first = succeeded((await run([spec], configDir))[0])
    expect(first.statements).toEqual([
      'SELECT * FROM (SELECT * FROM "mig_coalesce"\n) AS _rivet ORDER BY COALESCE("updated_at", "created_at")'
    ])
    // In COALESCE order: 2 (created 02-01), 3 (updated 02-15), 1 (updated 03-01).
    expect(ndjsonRows(out).map((row) => row["id"])).toEqual([2, 3, 1])
    expect(Object.keys(ndjsonRows(out)[0]!)).toEqual(["id", "updated_at", "created_at", "note"])
    expect(readManifest(out).source.cursor).toEqual({ column: "COALESCE(updated_at, created_at)", value: "2026-03-01T00:00:00.000000Z" })

    await sql.unsafe(`
      INSERT INTO mig_coalesce VALUES
        (4, NULL, '2026-04-01 00:00:00+00', 'new, never updated: after the cursor'),
        (5, NULL, '2025-12-01 00:00:00+00', 'never updated, before the cursor'),
        (6, '2026-03-02 00:00:00+00', '2025-11-01 00:00:00+00', 'updated after the cursor');
      UPDATE mig_coalesce SET updated_at = '2026-05-01 00:00:00+00' WHERE id = 2;
    `)
    const second = succeeded((await run([spec], configDir))[0])
    expect(second.statements[0]).toContain(`WHERE COALESCE("updated_at", "created_at") > '2026-03-01T00:00:00.000000Z'`)
    expect(ndjsonRows(out).map((row) => row["id"])).toEqual([6, 4, 2])
    expect(readManifest(out).source.cursor).toEqual({ column: "COALESCE(updated_at, created_at)", value: "2026-05-01T00:00:00.000000Z" })
  })

  it("refuses a fallback column of another type, naming both", async () => {
    const [outcome] = await run([
      {
        name: "coalesce_types",
        table: "mig_coalesce",
        mode: "incremental",
        cursor_column: "updated_at",
        cursor_fallback_column: "note",
        destination: { type: "local", path: "out" }
      }
    ])
    if (outcome?._tag !== "failure") throw new Error("a text fallback for a timestamptz cursor was accepted")
    expect(outcome.error.message).toBe(
      "column 'note' is string but cursor_column 'updated_at' is timestamptz: the coalesced cursor needs one type"
    )
  })
})

describe("rivet plan and run on a migrated config (CLI)", () => {
  const configFile = (yaml: string) => {
    const file = writeConfig(yaml)
    dirs.push(path.dirname(file))
    return file
  }

  it("plan resolves column types in mode: full and fails like run on an unbounded numeric or an override that does not fit", async () => {
    const refused = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: unbounded
    table: mig_plan
    destination: { type: local, path: out/unbounded }
  - name: misfit
    table: mig_plan
    columns: { amount: "decimal(12,2)", name: int32 }
    destination: { type: local, path: out/misfit }
`)
    const plan = await runCli(["plan", "-c", refused])
    expect(plan.code, plan.stderr).toBe(1)
    expect(plan.stderr).toMatch(
      /^Error: export "unbounded": 1 column\(s\) cannot be exported as they are:\\n {2}• amount: numeric has no declared precision and scale/m
    )
    expect(plan.stderr).toMatch(/^Error: export "misfit": .*• name: the override int32 does not fit PostgreSQL type text$/m)
    const runResult = await runCli(["run", "-c", refused])
    expect(runResult.code).toBe(1)
    // The same refusals as the run's, message for message.
    const errors = (stderr: string) => stderr.split("\n").filter((line) => line.startsWith("Error: "))
    expect(errors(plan.stderr)).toEqual(errors(runResult.stderr))

    const fixed = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: fixed
    wave: 3
    table: mig_plan
    columns: { amount: "decimal(12,2)" }
    meta_columns: [exported_at, row_hash]
    destination: { type: local, path: out/fixed }
`)
    const planned = await runCli(["plan", "-c", fixed])
    expect(planned.code, planned.stderr).toBe(0)
    expect(planned.stdout).toContain(
      "  columns:        5: id int32, amount decimal(12,2), name string, _rivet_exported_at timestamptz,\n                  _rivet_row_hash int64\n"
    )
    expect(planned.stdout).toContain("  note:           exports[0].wave: has no effect in Rivet: it is scheduling advice of the Rust rivet's plan command")
    const ran = await runCli(["run", "-c", fixed])
    expect(ran.code, ran.stderr).toBe(0)
    const notices = ran.stderr.split("\n").filter((line) => line.includes("exports[0].wave"))
    expect(notices).toEqual([
      "rivet: export 'fixed': exports[0].wave: has no effect in Rivet: it is scheduling advice of the Rust rivet's plan command (the wave its apply command runs the export in); Rivet runs the exports of a config one after another, in order"
    ])
  })
})
