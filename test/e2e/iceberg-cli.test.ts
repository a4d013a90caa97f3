import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { parquetMetadata } from "hyparquet"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { PlanFile } from "../../src/engine/plan/model.js"
import { runCli, writeConfig } from "../support/cli.js"
import { readIcebergTable } from "../support/iceberg.js"
import { testPgUrl } from "../support/pg.js"

// table_format: iceberg through the built CLI: plan shows the table, validate checks its current snapshot, doctor its
// catalog, and a run killed mid-way commits nothing.
let sql: postgres.Sql
const dirs: Array<string> = []

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ice_cli;
    CREATE TABLE ice_cli (id int PRIMARY KEY, note text, updated_at timestamptz NOT NULL);
    INSERT INTO ice_cli SELECT i, 'n' || i, timestamptz '2024-01-01 00:00:00+00' + i * interval '1 minute' FROM generate_series(1, 400) AS i;
  `)
}, 60_000)

afterAll(async () => {
  await sql?.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const configWith = (query: string) =>
  JSON.stringify({
    source: { type: "postgres", url: testPgUrl() },
    exports: [
      { name: "cli_orders", query, mode: "incremental", cursor_column: "updated_at", batch_size: 10, table_format: { type: "iceberg", namespace: "shop" }, destination: { type: "local", path: "lake" } }
    ]
  })

describe("table_format: iceberg through the CLI", () => {
  it("plan shows the table and operation; validate checks the snapshot's files; doctor checks the catalog; a killed run commits nothing", async () => {
    const config = writeConfig(configWith("SELECT id, note, updated_at FROM ice_cli WHERE id <= 100"))
    const dir = path.dirname(config)
    dirs.push(dir)
    const first = await runCli(["run", "-c", config])
    expect(first.code, first.stderr).toBe(0)

    const plan = await runCli(["plan", "-c", config, "--json"])
    expect(plan.code, plan.stderr).toBe(0)
    const planned = (JSON.parse(plan.stdout) as PlanFile).exports[0]!
    expect(planned.table).toMatchObject({ format: "iceberg", name: "shop.cli_orders", catalog: "file-system catalog", operation: "append" })
    expect(planned.table?.current_snapshot).toEqual(expect.any(Number))
    expect(planned.naming.startsWith("data/")).toBe(true)

    const doctor = await runCli(["doctor", "-c", config])
    expect(doctor.code, doctor.stdout + doctor.stderr).toBe(0)
    expect(doctor.stdout + doctor.stderr).toMatch(/Table shop\.cli_orders.*file-system catalog: table at/)

    const clean = await runCli(["validate", "-c", config])
    expect(clean.code, clean.stdout + clean.stderr).toBe(0)
    expect(clean.stdout + clean.stderr).not.toContain("UNTRACKED")

    // batch_size 10: the part outgrows its first batch, so the CLI encodes it on its encoder thread (given a second
    // core), which gets the schema with the table's field ids like the reading thread's encoder.
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "lake", "manifest.json"), "utf8")) as { parts: Array<{ path: string }> }
    const footer = parquetMetadata(new Uint8Array(fs.readFileSync(path.join(dir, "lake", manifest.parts[0]!.path))).buffer)
    expect(footer.schema.slice(1).map((element) => [element.name, element.field_id])).toEqual([["id", 1], ["note", 2], ["updated_at", 3]])

    // Killed while it reads: nothing is committed, the table stays readable at its snapshot.
    fs.writeFileSync(config, configWith("SELECT id, note, updated_at FROM ice_cli WHERE pg_sleep(0.02) IS NOT NULL"))
    let child: ChildProcess | undefined
    const killed = runCli(["run", "-c", config], { onStart: (started) => (child = started) })
    await new Promise((resolve) => setTimeout(resolve, 2500))
    child?.kill("SIGKILL")
    await killed
    const { metadata, rows } = await readIcebergTable(`file://${path.join(dir, "lake")}`)
    expect(metadata.snapshots).toHaveLength(1)
    expect(rows).toHaveLength(100)

    // A data file of the snapshot cut short: validate names it.
    const data = fs.readdirSync(path.join(dir, "lake", "data")).filter((name) => name.endsWith(".parquet"))
    const listed = JSON.parse(fs.readFileSync(path.join(dir, "lake", "manifest.json"), "utf8")) as { parts: Array<{ path: string }> }
    const victim = path.join(dir, "lake", listed.parts[0]!.path)
    expect(data.length).toBeGreaterThan(0)
    fs.truncateSync(victim, 10)
    const broken = await runCli(["validate", "-c", config])
    expect(broken.code).toBe(3)
    expect(broken.stdout + broken.stderr).toContain("TABLE_FILE_SIZE")
  }, 90_000)
})
