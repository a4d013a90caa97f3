import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExportsEffect } from "../../src/api.js"
import type { ExportRun } from "../../src/engine/run.js"
import { validateConfigValue } from "../../src/registry/load-config.js"
import { untyped } from "../support/config.js"
import { testPgUrl } from "../support/pg.js"
import { duckRows, hiveScan, listFiles } from "./partition-support.js"

// partition_by with the chunked and incremental modes, in process; and its config errors.
let sql: postgres.Sql
const tempDirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-partition-modes-"))
  tempDirs.push(dir)
  return dir
}

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS part_modes;
    CREATE TABLE part_modes (id int PRIMARY KEY, country text, updated_at timestamptz NOT NULL, broken boolean NOT NULL DEFAULT false);
    INSERT INTO part_modes SELECT i, (ARRAY['FR', 'DE', 'a/b', NULL])[1 + i % 4], timestamptz '2024-01-01 00:00:00+00' + i * interval '1 minute'
      FROM generate_series(1, 20000) AS i;
  `)
}, 60_000)

afterAll(async () => {
  await sql?.end()
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true })
})

const run = (dir: string, spec: Record<string, unknown>, resume = false): Promise<ExportRun> =>
  Effect.runPromise(
    runExportsEffect(
      untyped({
        source: { type: "postgres", url: testPgUrl() },
        exports: [{ name: "pm", table: "part_modes", format: "csv", destination: { type: "local", path: "out" }, ...spec }]
      }),
      { configDir: dir, resume }
    )
  ).then((runs) => runs[0]!)

const succeeded = (outcome: ExportRun) => {
  if (outcome._tag === "failure") throw new Error(`export failed: ${outcome.error.message}`)
  return outcome.result
}

const readBack = (out: string, scan = hiveScan("csv", out)) =>
  duckRows(`SELECT count(*) AS n, count(DISTINCT id) AS ids,
    count(*) FILTER (WHERE country IS DISTINCT FROM (ARRAY['FR', 'DE', 'a/b', NULL])[1 + id::int % 4]) AS wrong FROM ${scan}`)

describe("partition_by with modes", () => {
  it("chunked: each chunk writes into the partitions it touches, named _chunk{N}_{nonce}_p{i}", async () => {
    const dir = tempDir()
    const result = succeeded(await run(dir, { mode: "chunked", chunk_column: "id", chunk_size: 5000, partition_by: ["country", "updated_at:day"] }))
    expect(result.rows).toBe(20_000)
    const out = path.join(dir, "out")
    const parts = listFiles(out).filter((name) => name.endsWith(".csv"))
    expect(parts.every((name) => /^country=[^/]+\/updated_at_day=\d{4}-\d{2}-\d{2}\/pm_\d{8}_\d{6}_chunk\d+_[0-9a-f]{16}_p\d+\.csv$/.test(name))).toBe(true)
    expect(await readBack(out)).toEqual([{ n: "20000", ids: "20000", wrong: "0" }])
  })

  it("chunked --resume after a failed chunk whose closed partitions were committed: the manifest lists every row exactly once", async () => {
    const dir = tempDir()
    const spec = {
      table: undefined,
      query: "SELECT id, country, updated_at, 1 / (CASE WHEN broken THEN 0 ELSE 1 END) AS ok FROM part_modes",
      mode: "chunked",
      chunk_column: "id",
      chunk_size: 5000,
      chunk_checkpoint: true,
      batch_size: 500,
      partition_by: ["country"],
      max_open_partitions: 2
    }
    await sql.unsafe("UPDATE part_modes SET broken = (id = 12345)")
    try {
      const first = await run(dir, spec)
      expect(first._tag).toBe("failure")
      await sql.unsafe("UPDATE part_modes SET broken = false")
      const resumed = await run(dir, spec, true)
      if (resumed._tag === "failure") throw new Error(resumed.error.message)
      expect(resumed.result.rows).toBe(20_000)
    } finally {
      await sql.unsafe("UPDATE part_modes SET broken = false")
    }
    const out = path.join(dir, "out")
    const manifest = JSON.parse(fs.readFileSync(path.join(out, "manifest.json"), "utf8")) as {
      parts: Array<{ path: string; partition?: Record<string, string | null> }>
    }
    // Parts of the first attempt come back from the state store: the manifest still gives their partition values.
    const countryOf: Record<string, string | null> = { "%46%52": "FR", "%44%45": "DE", "a%2Fb": "a/b", __HIVE_DEFAULT_PARTITION__: null }
    for (const part of manifest.parts) expect(part.partition).toEqual({ country: countryOf[part.path.split("/")[0]!.slice("country=".length)] })
    const listed = manifest.parts.map((part) => `'${path.join(out, part.path)}'`)
    // The failed attempt at chunk 2 left parts no manifest lists (at-least-once); the listed ones hold each row once.
    expect(listFiles(out).filter((name) => name.endsWith(".csv")).length).toBeGreaterThan(manifest.parts.length)
    expect(await readBack(out, `read_csv([${listed.join(", ")}], hive_partitioning = true, header = true, all_varchar = true)`)).toEqual([
      { n: "20000", ids: "20000", wrong: "0" }
    ])
  })

  it("incremental: a later run appends new files into the existing partitions", async () => {
    const dir = tempDir()
    const spec = { mode: "incremental", cursor_column: "updated_at", partition_by: ["country"] }
    expect(succeeded(await run(dir, spec)).rows).toBe(20_000)
    const out = path.join(dir, "out")
    const before = listFiles(out).filter((name) => name.endsWith(".csv"))
    await sql.unsafe(`INSERT INTO part_modes SELECT i, (ARRAY['FR', 'DE', 'a/b', NULL])[1 + i % 4], timestamptz '2025-01-01 00:00:00+00' + i * interval '1 minute'
      FROM generate_series(20001, 20100) AS i`)
    try {
      expect(succeeded(await run(dir, spec)).rows).toBe(100)
      const after = listFiles(out).filter((name) => name.endsWith(".csv"))
      const added = after.filter((name) => !before.includes(name))
      expect(added).toHaveLength(4)
      expect(new Set(added.map((name) => path.dirname(name)))).toEqual(new Set(before.map((name) => path.dirname(name))))
      expect(await readBack(out)).toEqual([{ n: "20100", ids: "20100", wrong: "0" }])
    } finally {
      await sql.unsafe("DELETE FROM part_modes WHERE id > 20000")
    }
  })

  it("a partition column the result lacks or a granularity on a text column fails at run start, naming the config path", async () => {
    const unknown = await run(tempDir(), { partition_by: ["nope"] })
    expect(unknown._tag === "failure" && [unknown.error._tag, "path" in unknown.error ? unknown.error.path : ""]).toEqual(["ConfigError", "exports[0].partition_by[0]"])
    const text = await run(tempDir(), { partition_by: ["country:month"] })
    expect(text._tag === "failure" && text.error.message).toContain(":month needs a date or timestamp column, 'country' is string")
  })

  it("config errors: stdout, an unknown granularity, max_open_partitions out of range or without partition_by", async () => {
    const decoded = await Effect.runPromise(
      Effect.provide(
        validateConfigValue(
          {
            source: { type: "postgres", url: "postgres://postgres@127.0.0.1:1/none" },
            exports: [
              { name: "a", query: "select 1", format: "ndjson", partition_by: ["x"], destination: { type: "stdout" } },
              { name: "b", query: "select 1", partition_by: ["x:week"], destination: { type: "local", path: "b" } },
              { name: "c", query: "select 1", partition_by: ["x"], max_open_partitions: 0, destination: { type: "local", path: "c" } },
              { name: "d", query: "select 1", max_open_partitions: 4, destination: { type: "local", path: "d" } }
            ]
          },
          "/tmp",
          "test.yaml"
        ),
        NodeFileSystem.layer
      )
    )
    expect(Either.isLeft(decoded) ? decoded.left.map((error) => error.path).sort() : []).toEqual([
      "exports[0].partition_by",
      "exports[1].partition_by[0]",
      "exports[2].max_open_partitions",
      "exports[3].max_open_partitions"
    ])
  })
})
