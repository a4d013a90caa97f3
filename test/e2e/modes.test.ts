import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExportsEffect } from "../../src/api.js"
import type { ExportRun } from "../../src/engine/run.js"
import { testPgUrl } from "../support/pg.js"
import { filesUnder, multiset, ndjsonRows, readManifest } from "../support/output.js"
import { untyped } from "../support/config.js"

let sql: postgres.Sql
const tempDirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-modes-"))
  tempDirs.push(dir)
  return dir
}

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 2, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS modes_inc, modes_chunk, modes_keyset, modes_window, modes_flaky;
    CREATE TABLE modes_inc (id int PRIMARY KEY, updated_at timestamptz NOT NULL, note text);
    INSERT INTO modes_inc SELECT i, timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second' + interval '0.000123 second', 'n' || i
      FROM generate_series(1, 100) AS i;
    CREATE TABLE modes_chunk (rid int PRIMARY KEY, k bigint, payload text);
    INSERT INTO modes_chunk SELECT i, CASE WHEN i % 997 = 0 THEN NULL ELSE i * 3 END, 'p' FROM generate_series(1, 1000000) AS i
      WHERE i % 10 <> 7;
    CREATE INDEX ON modes_chunk (k);
    CREATE TABLE modes_keyset (tenant text NOT NULL, seq int NOT NULL, v text, PRIMARY KEY (tenant, seq));
    INSERT INTO modes_keyset SELECT 't' || (i % 7), i, 'v' || i FROM generate_series(1, 5000) AS i;
    CREATE TABLE modes_window (id int PRIMARY KEY, at timestamptz NOT NULL, day date NOT NULL);
    INSERT INTO modes_window VALUES
      (1, now() - interval '1 hour', current_date),
      (2, now() - interval '3 days', current_date - 3),
      (3, now() - interval '10 days', current_date - 10),
      (4, now() + interval '1 day', current_date + 1);
    CREATE TABLE modes_flaky (id int PRIMARY KEY, broken boolean NOT NULL DEFAULT false);
    INSERT INTO modes_flaky SELECT i, i = 250 FROM generate_series(1, 1000) AS i;
  `)
}, 120_000)

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS modes_inc, modes_chunk, modes_keyset, modes_window, modes_flaky")
  await sql.end()
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true })
})

const config = (exportSpec: Record<string, unknown>) =>
  untyped({
    source: { type: "postgres", url: testPgUrl() },
    exports: [{ name: "t", format: "ndjson", destination: { type: "local", path: "out" }, ...exportSpec }]
  })

const run = (
  configDir: string,
  exportSpec: Record<string, unknown>,
  options: { env?: Record<string, string | undefined> } = {}
): Promise<ExportRun> =>
  Effect.runPromise(
    runExportsEffect(config(exportSpec), { configDir, ...(options.env ? { env: options.env } : {}) })
  ).then((runs) => runs[0]!)

const succeeded = (outcome: ExportRun) => {
  if (outcome._tag === "failure") throw new Error(`export failed: ${outcome.error.message}`)
  return outcome.result
}

const failed = (outcome: ExportRun) => {
  if (outcome._tag === "success") throw new Error("export succeeded but should have failed")
  return outcome.error
}

describe.each([
  ["SQLite state", () => ({})],
  ["PostgreSQL state (RIVET_STATE_URL)", () => ({ RIVET_STATE_URL: testPgUrl() })]
])("incremental mode with %s", (_label, stateEnv) => {
  it("exports everything first, then exactly the new rows; a failed run keeps the cursor; skip_empty", async () => {
    const dir = tempDir()
    const name = `inc_${Math.random().toString(36).slice(2, 8)}`
    const env = { ...process.env, ...stateEnv() }
    const spec = { name, table: "modes_inc", mode: "incremental", cursor_column: "updated_at" }
    const out = path.join(dir, "out")

    const first = succeeded(await run(dir, spec, { env }))
    expect(first.rows).toBe(100)
    expect(first.manifest?.source).toMatchObject({ mode: "incremental", cursor: { column: "updated_at" } })
    expect(first.manifest?.source.cursor?.value).toBe("2026-01-01T00:01:40.000123Z")

    await sql.unsafe(`INSERT INTO modes_inc SELECT i, timestamptz '2026-02-01 00:00:00+00' + i * interval '1 second', 'late'
      FROM generate_series(1001, 1020) AS i`)
    try {
      // A run that cannot write keeps the old cursor.
      fs.rmSync(out, { recursive: true })
      fs.writeFileSync(out, "a file where the destination directory should be")
      expect(failed(await run(dir, spec, { env }))._tag).toBe("SinkError")
      fs.rmSync(out)

      const second = succeeded(await run(dir, spec, { env }))
      expect(second.rows).toBe(20)
      expect(ndjsonRows(out).map((row) => row["id"])).toEqual(Array.from({ length: 20 }, (_, i) => 1001 + i))

      const manifestBefore = fs.readFileSync(path.join(out, "manifest.json"), "utf8")
      const filesBefore = filesUnder(out)
      const skipped = succeeded(await run(dir, { ...spec, skip_empty: true }, { env }))
      expect(skipped.status).toBe("skipped")
      expect(filesUnder(out)).toEqual(filesBefore)
      expect(fs.readFileSync(path.join(out, "manifest.json"), "utf8")).toBe(manifestBefore)

      const empty = succeeded(await run(dir, spec, { env }))
      expect(empty.status).toBe("success")
      expect(readManifest(out)).toMatchObject({ row_count: 0, part_count: 0 })
    } finally {
      await sql.unsafe("DELETE FROM modes_inc WHERE id > 1000")
    }
  })
})

describe("chunked mode", () => {
  it("parallel: 2 over 1M rows with key gaps and NULL keys exports every row exactly once", async () => {
    const dir = tempDir()
    const result = succeeded(
      await run(dir, {
        table: "modes_chunk",
        mode: "chunked",
        chunk_column: "k",
        chunk_size: 250_000,
        parallel: 2,
        format: "csv",
        batch_size: 20_000
      })
    )
    const source = await sql.unsafe<Array<{ rid: number }>>("SELECT rid FROM modes_chunk")
    expect(result.rows).toBe(source.length)
    const out = path.join(dir, "out")
    const exported = readManifest(out).parts.flatMap((part) =>
      fs
        .readFileSync(path.join(out, part.path), "utf8")
        .split("\n")
        .slice(1)
        .filter((line) => line.length > 0)
        .map((line) => Number(line.split(",")[0]))
    )
    expect(exported.length).toBe(source.length)
    expect(multiset(exported)).toEqual(multiset(source.map((row) => row.rid)))
    for (const part of result.parts) expect(part.path).toMatch(/^t_\d{8}_\d{6}_chunk\d+_[0-9a-f]{16}\.csv$/)
    // 3M key span / 250k = 12 range chunks + 1 NULL chunk, all non-empty here.
    expect(result.parts).toHaveLength(13)
  })

  it("refuses a plain re-run of an unfinished checkpointed run, refuses a changed plan, resumes the rest", async () => {
    const dir = tempDir()
    const spec = {
      query: "SELECT id, 1 / (CASE WHEN broken THEN 0 ELSE 1 END) AS ok FROM modes_flaky",
      mode: "chunked",
      chunk_column: "id",
      chunk_size: 100,
      chunk_checkpoint: true
    }
    try {
      const first = failed(await run(dir, spec))
      expect(first.message).toMatch(/chunk 2 \(id 201\.\.300\)/)
      const committed = filesUnder(path.join(dir, "out")).filter((file) => file.endsWith(".ndjson"))
      expect(committed).toHaveLength(2)

      const plain = failed(await run(dir, spec))
      expect(plain._tag).toBe("StateError")
      expect(plain.message).toMatch(/checkpointed run 't_\d{8}T\d{6}\.\d{3}' did not finish/)
      expect(plain.hint).toMatch(/--resume/)

      await sql.unsafe("UPDATE modes_flaky SET broken = false")
      const changed = failed(await runResume(dir, { ...spec, chunk_size: 50 }))
      expect(changed.message).toContain("mode.chunk_size: run has 100, this config has 50")

      const resumed = succeeded(await runResume(dir, spec))
      expect(resumed.resumed).toBe(true)
      expect(resumed.rows).toBe(1000)
      const ids = ndjsonRows(path.join(dir, "out")).map((row) => row["id"])
      expect(multiset(ids)).toEqual(multiset(Array.from({ length: 1000 }, (_, i) => i + 1)))
      // The two chunks committed before the failure were kept, not redone.
      for (const file of committed) expect(resumed.parts.map((part) => part.path)).toContain(file)
    } finally {
      await sql.unsafe("UPDATE modes_flaky SET broken = (id = 250)")
    }
  })
})

const runResume = (configDir: string, exportSpec: Record<string, unknown>): Promise<ExportRun> =>
  Effect.runPromise(runExportsEffect(config(exportSpec), { configDir, resume: true })).then((runs) => runs[0]!)

describe("keyset mode", () => {
  it("pages a composite primary key: every row once, one part per page named after the run", async () => {
    const dir = tempDir()
    const result = succeeded(await run(dir, { table: "modes_keyset", mode: "keyset", page_size: 1000 }))
    expect(result.rows).toBe(5000)
    expect(result.parts).toHaveLength(5)
    result.parts.forEach((part, page) =>
      expect(part.path).toMatch(new RegExp(`^t_\\d{8}T\\d{6}_\\d{3}_page${page}\\.ndjson$`))
    )
    const rows = ndjsonRows(path.join(dir, "out"))
    expect(multiset(rows.map((row) => row["seq"]))).toEqual(multiset(Array.from({ length: 5000 }, (_, i) => i + 1)))
    const keys = rows.map((row) => [row["tenant"] as string, row["seq"] as number] as const)
    const sorted = [...keys].sort(([t1, s1], [t2, s2]) => (t1 < t2 ? -1 : t1 > t2 ? 1 : s1 - s2))
    expect(keys).toEqual(sorted)
  })

  it("refuses a key column with NULLs", async () => {
    const error = failed(
      await run(tempDir(), { table: "modes_chunk", mode: "keyset", key_columns: "k", page_size: 100_000 })
    )
    expect(error.message).toMatch(/column 'k' has NULL values/)
  })
})

describe("time_window mode", () => {
  it.each([["at"], ["day"]])("exports rows from UTC midnight N days ago until now (%s)", async (column) => {
    const dir = tempDir()
    const result = succeeded(await run(dir, { table: "modes_window", mode: "time_window", time_column: column, days_window: 5 }))
    expect(ndjsonRows(path.join(dir, "out")).map((row) => row["id"]).sort()).toEqual([1, 2])
    expect(result.manifest?.source.mode).toBe("time_window")
  })
})
