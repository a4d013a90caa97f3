import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { exportToMap } from "../../examples/custom-sink.js"
import { exportOrdersToArrow } from "../../examples/transform-to-arrow.js"
import { testPgUrl } from "../support/pg.js"
import { runProcess } from "../support/process.js"

/** Runs the programmatic examples (they import "rivet": `npm run build` first) against a real table. */

const ROOT = path.resolve(import.meta.dirname, "../..")
const PLUGIN_DIR = path.join(ROOT, "plugins/rivet-format-arrow")
const TABLE = "plugex_orders"
const dirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-examples-"))
  dirs.push(dir)
  return dir
}

beforeAll(async () => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (id int8 PRIMARY KEY, status text NOT NULL, total numeric(10,2));
    INSERT INTO ${TABLE}
    SELECT i, CASE WHEN i % 10 = 0 THEN 'cancelled' ELSE 'paid' END, CASE WHEN i % 17 = 0 THEN NULL ELSE i * 3.07 END
    FROM generate_series(1, 100) AS i;
  `)
  await sql.end()
})

afterAll(async () => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

describe("examples/custom-sink.ts", () => {
  it("exports into a Map through a sink defined in code: the part, manifest.json, its kept copy and _SUCCESS", async () => {
    const { result, objects } = await exportToMap(testPgUrl(), tempDir(), TABLE)
    expect(result.rows).toBe(100)
    const keys = [...objects.keys()].sort()
    const kept = `exports/_manifests/${result.runId}.json`
    expect(keys).toEqual([`exports/${result.parts[0]!.path}`, "exports/_SUCCESS", kept, "exports/manifest.json"].sort())
    expect(objects.get(kept)).toEqual(objects.get("exports/manifest.json"))
    const lines = Buffer.from(objects.get(`exports/${result.parts[0]!.path}`)!).toString("utf8").trim().split("\n")
    expect(lines.map((line) => JSON.parse(line) as { id: number | string })).toHaveLength(100)
    expect(JSON.parse(lines[16]!)).toEqual({ id: "17", status: "paid", total: null })
    const manifest = JSON.parse(Buffer.from(objects.get("exports/manifest.json")!).toString("utf8")) as { destination: unknown }
    expect(manifest.destination).toEqual({ type: "map", uri: "map:exports/" })
  })
})

describe("examples/transform-to-arrow.ts", () => {
  beforeAll(async () => {
    const prepared = await runProcess(process.execPath, [path.join(ROOT, "scripts/test-plugins.mjs"), "--prepare", PLUGIN_DIR])
    expect(prepared.code, prepared.stderr).toBe(0)
  }, 600_000)

  it("drops cancelled orders and adds exact computed columns, written as Arrow", async () => {
    const workDir = tempDir()
    const result = await exportOrdersToArrow(testPgUrl(), workDir, TABLE)
    expect(result.rows).toBe(90)
    expect(result.manifest?.schema.map((column) => `${column.name}:${column.type}`)).toEqual([
      "id:int64",
      "status:string",
      "total:decimal(10,2)",
      "total_cents:int64",
      "band:string"
    ])
    const arrow = (await import(pathToFileURL(path.join(PLUGIN_DIR, "node_modules/apache-arrow/Arrow.node.mjs")).href)) as {
      tableFromIPC(bytes: Uint8Array): { numRows: number; toArray(): ReadonlyArray<{ toJSON(): Record<string, unknown> }> }
    }
    const table = arrow.tableFromIPC(fs.readFileSync(path.join(workDir, "orders", result.parts[0]!.path)))
    const rows = table.toArray().map((row) => row.toJSON())
    expect(rows).toHaveLength(90)
    expect(rows.some((row) => row["status"] === "cancelled")).toBe(false)
    const row = (id: bigint) => rows.find((candidate) => candidate["id"] === id)!
    expect(row(33n)).toMatchObject({ total_cents: 10131n, band: "large" })
    expect(row(3n)).toMatchObject({ total_cents: 921n, band: "small" })
    expect(row(17n)).toMatchObject({ total_cents: null, band: null })
  })
})
