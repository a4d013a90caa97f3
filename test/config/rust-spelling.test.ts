import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadConfig, runExportsEffect } from "../../src/api.js"
import type { ExportRun } from "../../src/engine/run.js"
import { metadataOf } from "../plugins/formats/parquet/read-back.js"
import { readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"

// The Rust rivet's spelling of settings Rivet has (src/config/rust-spelling.ts, rust-tuning.ts), each shown by what
// it does to a run against PostgreSQL: the codec and row groups written, the mode's parts, the query read, the
// session's timeouts.

let sql: postgres.Sql
const dirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-rust-spelling-"))
  dirs.push(dir)
  return dir
}

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS rs_items;
    CREATE TABLE rs_items (id int PRIMARY KEY, name text);
    INSERT INTO rs_items SELECT i, 'item ' || i FROM generate_series(1, 250) AS i;
  `)
})

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS rs_items")
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

type Source = Record<string, unknown>
const pg = (extra: Source = {}): Source => ({ type: "postgres", url: testPgUrl(), ...extra })

const run = (source: Source, exports: ReadonlyArray<Record<string, unknown>>, configDir = tempDir()) =>
  Effect.runPromise(runExportsEffect({ source, exports } as never, { configDir }))

const succeeded = (outcome: ExportRun | undefined) => {
  if (outcome?._tag !== "success") throw new Error(`the export failed: ${outcome?._tag === "failure" ? outcome.error.message : "no outcome"}`)
  return outcome.result
}

const parquetMetadata = (dir: string) =>
  readManifest(dir).parts.map((part) => {
    const bytes = fs.readFileSync(path.join(dir, part.path))
    return metadataOf(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))
  })

const csvRows = (dir: string) =>
  readManifest(dir).parts.flatMap((part) => fs.readFileSync(path.join(dir, part.path), "utf8").trim().split("\n").slice(1))

describe("the Rust rivet's spelling", () => {
  it("compression_profile picks the codec and level: fast → snappy, compact → zstd", async () => {
    const dir = tempDir()
    const outcomes = await run(pg(), [
      { name: "fast", table: "rs_items", format: "parquet", compression_profile: "fast", destination: { type: "local", path: path.join(dir, "fast") } },
      { name: "compact", table: "rs_items", format: "parquet", compression_profile: "compact", destination: { type: "local", path: path.join(dir, "compact") } }
    ])
    outcomes.forEach(succeeded)
    expect(parquetMetadata(path.join(dir, "fast"))[0]!.row_groups[0]!.columns[0]!.meta_data?.codec).toBe("SNAPPY")
    expect(parquetMetadata(path.join(dir, "compact"))[0]!.row_groups[0]!.columns[0]!.meta_data?.codec).toBe("ZSTD")
    const config = await Effect.runPromise(loadConfig({ source: pg(), exports: [{ name: "c", table: "rs_items", compression_profile: "compact", destination: { type: "local", path: "out" } }] } as never))
    expect(config.exports[0]!.format.config).toMatchObject({ compression: "zstd", compression_level: 9 })
  })

  it("parquet.row_group_rows sets the row group size; a sub-key without equivalent is a warning naming it", async () => {
    const dir = tempDir()
    const exports = [{ name: "groups", table: "rs_items", format: "parquet", parquet: { row_group_rows: 100, target_row_group_mb: 64 }, destination: { type: "local", path: dir } }]
    succeeded((await run(pg(), exports))[0])
    expect(parquetMetadata(dir)[0]!.row_groups.map((group) => Number(group.num_rows))).toEqual([100, 100, 50])
    const config = await Effect.runPromise(loadConfig({ source: pg(), exports } as never))
    expect(config.exports[0]!.notices).toEqual([
      expect.objectContaining({ path: "exports[0].parquet.target_row_group_mb", severity: "warning", message: expect.stringContaining("no equivalent") })
    ])
  })

  it("chunk_by_key reads pages of chunk_size rows ordered by the key (mode: keyset)", async () => {
    const dir = tempDir()
    const result = succeeded((await run(pg(), [{ name: "paged", table: "rs_items", format: "csv", mode: "chunked", chunk_by_key: "id", chunk_size: 100, destination: { type: "local", path: dir } }]))[0])
    expect(readManifest(dir).part_count).toBe(3)
    expect(result.rows).toBe(250)
  })

  it("chunk_count divides the key range into that many chunks", async () => {
    const dir = tempDir()
    const result = succeeded((await run(pg(), [{ name: "counted", table: "rs_items", format: "csv", mode: "chunked", chunk_count: 4, destination: { type: "local", path: dir } }]))[0])
    expect(readManifest(dir).part_count).toBe(4)
    expect(readManifest(dir).parts.map((part) => part.rows)).toEqual([63, 63, 63, 61])
    expect(result.rows).toBe(250)
  })

  it("time_column_type: unix windows an integer column of epoch seconds", async () => {
    await sql.unsafe(`
      DROP TABLE IF EXISTS rs_events;
      CREATE TABLE rs_events (id int, at_s bigint);
      INSERT INTO rs_events VALUES (1, extract(epoch FROM now())::bigint - 60), (2, extract(epoch FROM now() - interval '3 days')::bigint), (3, 0);
    `)
    try {
      const dir = tempDir()
      const exports = [{ name: "recent", table: "rs_events", format: "csv", mode: "time_window", time_column: "at_s", time_column_type: "unix", days_window: 1, destination: { type: "local", path: dir } }]
      succeeded((await run(pg(), exports))[0])
      expect(csvRows(dir).map((row) => row.split(",")[0])).toEqual(["1"])
      const refused = (await run(pg(), [{ ...exports[0], name: "wrong", time_column: "name", table: "rs_items", destination: { type: "local", path: tempDir() } }]))[0]
      expect(refused?._tag === "failure" && refused.error.message).toContain("time_column_type: unix needs an integer column")
    } finally {
      await sql.unsafe("DROP TABLE IF EXISTS rs_events")
    }
  })

  it("query_file reads the query from a file beside the config; a missing one is an error naming the key", async () => {
    const configDir = tempDir()
    fs.mkdirSync(path.join(configDir, "sql"))
    fs.writeFileSync(path.join(configDir, "sql", "few.sql"), "-- the first three\nSELECT id FROM rs_items WHERE id <= 3 ORDER BY id;\n")
    const out = path.join(configDir, "out")
    succeeded((await run(pg(), [{ name: "from_file", query_file: "sql/few.sql", format: "csv", destination: { type: "local", path: out } }], configDir))[0])
    expect(csvRows(out)).toEqual(["1", "2", "3"])
    const missing = await Effect.runPromise(
      Effect.flip(loadConfig({ source: pg(), exports: [{ name: "m", query_file: "sql/none.sql", destination: { type: "local", path: "out" } }] } as never, { configDir }))
    )
    expect(missing.path).toBe("exports[0].query_file")
    expect(missing.message).toContain(path.join(configDir, "sql", "none.sql"))
  })

  it("tuning and environment set the session's timeouts and the batch size; a sub-key without equivalent is a warning", async () => {
    const query = "SELECT current_setting('statement_timeout') AS st, current_setting('lock_timeout') AS lt"
    const dir = tempDir()
    const outcomes = await run(pg({ tuning: { profile: "safe" } }), [{ name: "safe", query, format: "csv", destination: { type: "local", path: path.join(dir, "safe") } }])
    outcomes.forEach(succeeded)
    expect(csvRows(path.join(dir, "safe"))).toEqual(["2min,10s"])
    succeeded((await run(pg({ environment: "local" }), [{ name: "local", query, format: "csv", destination: { type: "local", path: path.join(dir, "local") } }]))[0])
    expect(csvRows(path.join(dir, "local"))).toEqual(["0,0"])

    const config = await Effect.runPromise(
      loadConfig({
        source: pg({ environment: "production", tuning: { throttle_ms: 50 } }),
        exports: [
          { name: "a", table: "rs_items", destination: { type: "local", path: "a" } },
          { name: "b", table: "rs_items", tuning: { profile: "fast", batch_size: 1234 }, destination: { type: "local", path: "b" } }
        ]
      } as never)
    )
    expect(config.exports.map((spec) => spec.batchSize)).toEqual([10_000, 1234])
    expect(config.exports[0]!.notices).toEqual([expect.objectContaining({ path: "source.tuning.throttle_ms", severity: "warning" })])
  })
})
