import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExportsEffect } from "../../src/api.js"
import { exitCodeOf } from "../../src/core/errors.js"
import type { ExportRun } from "../../src/engine/run.js"
import { UniqueCounter } from "../../src/engine/quality/unique.js"
import { filesUnder } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"

let sql: postgres.Sql
const dirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-quality-"))
  dirs.push(dir)
  return dir
}

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS quality_t, drift_t;
    CREATE TABLE quality_t (id int PRIMARY KEY, email text, code text);
    INSERT INTO quality_t SELECT i, CASE WHEN i % 10 = 0 THEN NULL ELSE 'u' || i END, 'c' || (i % 990)
      FROM generate_series(1, 1000) AS i;
    CREATE TABLE drift_t (id int PRIMARY KEY, name text);
    INSERT INTO drift_t VALUES (1, 'a'), (2, 'b');
  `)
})

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS quality_t, drift_t")
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const run = (configDir: string, spec: Record<string, unknown>): Promise<ExportRun> =>
  Effect.runPromise(
    runExportsEffect(
      {
        source: { type: "postgres", url: testPgUrl() },
        exports: [{ name: "q", format: "csv", destination: { type: "local", path: "out" }, ...spec }]
      },
      { configDir }
    )
  ).then((runs) => runs[0]!)

const errorOf = (outcome: ExportRun) => {
  if (outcome._tag === "success") throw new Error("expected the export to fail")
  return outcome.error
}

describe("quality gates", () => {
  it("pass when every gate holds", async () => {
    const outcome = await run(tempDir(), {
      table: "quality_t",
      quality: { row_count_min: 1000, row_count_max: 1000, null_ratio_max: { email: 0.1 }, unique_columns: ["id", "email"] }
    })
    expect(outcome._tag).toBe("success")
  })

  it("fail with one line per failed gate, exit 3, and publish nothing", async () => {
    const dir = tempDir()
    const error = errorOf(
      await run(dir, {
        table: "quality_t",
        quality: { row_count_min: 2000, null_ratio_max: { email: 0.05, nope: 0.1 }, unique_columns: ["code"] }
      })
    )
    expect(error._tag).toBe("IntegrityError")
    expect(exitCodeOf(error)).toBe(3)
    expect(error.message).toContain("4 quality check(s) failed")
    expect(error.message).toContain("row_count 1000 is below the minimum 2000")
    expect(error.message).toContain("column 'email': NULL ratio 0.1000 exceeds 0.05")
    expect(error.message).toContain("column 'nope' is not in the output")
    expect(error.message).toContain("column 'code': 10 duplicate value(s) among 1000 rows")
    const files = filesUnder(path.join(dir, "out"))
    expect(files).not.toContain("_SUCCESS")
    expect(files).not.toContain("manifest.json")
  })

  it("uniqueness spills sorted runs to disk and still counts exactly", () => {
    const counter = new UniqueCounter()
    const total = 2_500_000 // more than two in-memory runs
    for (let i = 0; i < total; i++) counter.add(i % 2_000_000)
    counter.add(null)
    expect(counter.duplicates()).toBe(500_000)
  })
})

describe("schema drift", () => {
  const spec = (onSchemaDrift?: string) => ({
    table: "drift_t",
    ...(onSchemaDrift ? { on_schema_drift: onSchemaDrift } : {})
  })

  it("fail: exit 4, nothing written, baseline kept; warn accepts the change; continue is silent", async () => {
    const dir = tempDir()
    expect((await run(dir, spec("fail")))._tag).toBe("success")
    await sql.unsafe("ALTER TABLE drift_t ADD COLUMN extra bigint")
    try {
      const before = filesUnder(path.join(dir, "out"))
      const error = errorOf(await run(dir, spec("fail")))
      expect(error._tag).toBe("SchemaDriftError")
      expect(exitCodeOf(error)).toBe(4)
      expect(error.message).toContain("added extra (int64)")
      expect(filesUnder(path.join(dir, "out"))).toEqual(before)
      // The baseline was kept: failing again gives the same verdict.
      expect(errorOf(await run(dir, spec("fail")))._tag).toBe("SchemaDriftError")
      // warn publishes and takes the new schema as the baseline, so `fail` passes afterwards.
      expect((await run(dir, spec("warn")))._tag).toBe("success")
      expect((await run(dir, spec("fail")))._tag).toBe("success")
      await sql.unsafe("ALTER TABLE drift_t ALTER COLUMN extra TYPE int")
      expect((await run(dir, spec("continue")))._tag).toBe("success")
      expect((await run(dir, spec("fail")))._tag).toBe("success")
    } finally {
      await sql.unsafe("ALTER TABLE drift_t DROP COLUMN IF EXISTS extra")
    }
  })
})
