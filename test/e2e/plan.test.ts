import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { PlanFile, PlannedExport } from "../../src/engine/plan/model.js"
import { runCli, writeConfig } from "../support/cli.js"
import { filesUnder, readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"

const PASSWORD = "plan-s3cret-pw"

let sql: postgres.Sql
const configs: Array<string> = []

/** The test database's URL with a password in it: trust authentication ignores it, the output must never show it. */
const urlWithPassword = () => {
  const url = new URL(testPgUrl())
  url.password = PASSWORD
  return url.toString()
}

const configFile = (yaml: string) => {
  const file = writeConfig(yaml)
  configs.push(path.dirname(file))
  return file
}

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 2, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS plan_orders, plan_lines, plan_fresh;
    CREATE TABLE plan_orders (id bigint PRIMARY KEY, updated_at timestamptz NOT NULL, note text);
    INSERT INTO plan_orders SELECT i, timestamptz '2026-01-01 00:00:00+00' + i * interval '1 minute', 'n' || i
      FROM generate_series(1, 5000) AS i;
    ANALYZE plan_orders;
    CREATE TABLE plan_lines (tenant text NOT NULL, seq int NOT NULL, v text, PRIMARY KEY (tenant, seq));
    INSERT INTO plan_lines SELECT 't' || (i % 3), i, 'v' || i FROM generate_series(1, 2500) AS i;
    ANALYZE plan_lines;
    CREATE TABLE plan_fresh (id int, v text) WITH (autovacuum_enabled = false);
    INSERT INTO plan_fresh SELECT i, 'x' FROM generate_series(1, 100) AS i;
  `)
}, 120_000)

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS plan_orders, plan_lines, plan_fresh")
  await sql.end()
  for (const dir of configs) fs.rmSync(dir, { recursive: true, force: true })
})

const PLACEHOLDERS: Record<string, string> = {
  "{YYYYMMDD}": "\\d{8}",
  "{HHMMSS}": "\\d{6}",
  "{mmm}": "\\d{3}",
  "{N}": "\\d+",
  "{i}": "\\d+",
  "{nonce}": "[0-9a-f]{16}"
}

/** `orders_{YYYYMMDD}_…{nonce}.parquet` → a RegExp every part name of the plan must match. */
const namingRegExp = (pattern: string) =>
  new RegExp(
    `^${pattern
      .split(/(\{[A-Za-z]+\})/)
      .map((piece) => PLACEHOLDERS[piece] ?? piece.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"))
      .join("")}$`
  )

/** The JSON events a `--json` run wrote on stderr. */
const events = (stderr: string): Array<Record<string, unknown>> =>
  stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)

const executedStatements = (stderr: string): Map<string, ReadonlyArray<string>> =>
  new Map(
    events(stderr)
      .filter((event) => event["event"] === "statements")
      .map((event) => [event["export"] as string, event["statements"] as ReadonlyArray<string>])
  )

const byName = (plan: PlanFile): Map<string, PlannedExport> => new Map(plan.exports.map((entry) => [entry.name, entry]))

const fourModes = () => `source: { type: postgres, url: "${urlWithPassword()}" }
exports:
  - name: p_full
    table: plan_orders
    format: csv
    destination: { type: local, path: out/full }
  - name: p_inc
    table: plan_orders
    mode: incremental
    cursor_column: updated_at
    cursor_lag: 1m
    format: ndjson
    destination: { type: local, path: out/inc }
  - name: p_chunk
    table: plan_orders
    mode: chunked
    chunk_column: id
    chunk_size: 1000
    parallel: 2
    format: parquet
    destination: { type: local, path: out/chunk }
  - name: p_keyset
    table: plan_lines
    mode: keyset
    page_size: 1000
    format: ndjson
    destination: { type: local, path: out/keyset }
`

describe("rivet plan and rivet run --plan", () => {
  it("plans every mode without writing anything, and run --plan executes exactly the planned statements", async () => {
    const config = configFile(fourModes())
    const dir = path.dirname(config)

    // Planning a config that never ran creates neither state nor output.
    const cold = await runCli(["plan", "-c", config])
    expect(cold.code, cold.stderr).toBe(0)
    expect(cold.stdout).toContain("── p_chunk")
    expect(cold.stdout).toContain("updated_at: none stored, every row is read")
    expect(cold.stdout).toContain("naming:")
    expect(`${cold.stdout}${cold.stderr}`).not.toContain(PASSWORD)
    expect(filesUnder(dir)).toEqual(["rivet.yaml"])

    const first = await runCli(["run", "-c", config, "-e", "p_inc"])
    expect(first.code, first.stderr).toBe(0)
    const cursor = readManifest(path.join(dir, "out/inc")).source.cursor!
    expect(cursor.value).toBe("2026-01-04T11:20:00.000000Z")
    await sql.unsafe(`INSERT INTO plan_orders SELECT i, timestamptz '2026-02-01 00:00:00+00' + i * interval '1 second', 'new'
      FROM generate_series(5001, 5040) AS i`)
    try {
      const json = await runCli(["plan", "-c", config, "--json"])
      expect(json.code, json.stderr).toBe(0)
      expect(`${json.stdout}${json.stderr}`).not.toContain(PASSWORD)
      const shown = byName(JSON.parse(json.stdout) as PlanFile)

      const full = shown.get("p_full")!
      expect(full).toMatchObject({ mode: "full", statements: ['SELECT * FROM "plan_orders"'], estimated_rows: 5000 })
      expect(full.source).toContain(":***@")
      expect(full.destination).toBe(`file://${path.join(dir, "out/full")}`)
      expect(full.naming).toBe("p_full_{YYYYMMDD}_{HHMMSS}_{mmm}.csv")

      const inc = shown.get("p_inc")!
      expect(inc.cursor).toMatchObject({ column: "updated_at", stored: { value: cursor.value }, after: cursor.value })
      expect(inc.cursor?.until).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
      expect(inc.statements).toEqual([
        `SELECT * FROM (SELECT * FROM "plan_orders"\n) AS _rivet WHERE "updated_at" > '${cursor.value}' AND "updated_at" <= '${inc.cursor?.until}' ORDER BY "updated_at"`
      ])
      expect(inc.estimated_rows).toEqual(expect.any(Number))

      const chunk = shown.get("p_chunk")!
      expect(chunk.chunks).toMatchObject({ column: "id", size: 1000, count: 6, first: { low: "1", high: "1000" }, last: { low: "5001", high: "5040" } })
      expect(chunk.statements).toHaveLength(6)
      expect(chunk.statements[0]).toBe(`SELECT * FROM (SELECT * FROM "plan_orders"\n) AS _rivet WHERE "id" BETWEEN '1' AND '1000'`)
      expect(chunk.naming).toBe("p_chunk_{YYYYMMDD}_{HHMMSS}_chunk{N}_{nonce}.parquet")

      const keyset = shown.get("p_keyset")!
      expect(keyset.pages).toEqual({ key_columns: ["tenant", "seq"], page_size: 1000 })
      expect(keyset.statements).toEqual([`SELECT * FROM (SELECT * FROM "plan_lines"\n) AS _rivet ORDER BY "tenant", "seq" LIMIT 1000`])
      expect(keyset.notices).toEqual([expect.stringContaining("key_columns not set")])
      expect(keyset.estimated_rows).toBe(2500)

      const written = await runCli(["plan", "-c", config, "-o", path.join(dir, "plan.json")])
      expect(written.code, written.stderr).toBe(0)
      const planText = fs.readFileSync(path.join(dir, "plan.json"), "utf8")
      expect(planText).not.toContain(PASSWORD)
      const plan = JSON.parse(planText) as PlanFile
      expect(plan.plan_version).toBe(1)
      expect(plan.config).toEqual({ path: config, sha256: createHash("sha256").update(fs.readFileSync(config)).digest("hex") })
      expect(Date.parse(plan.expires_at) - Date.parse(plan.created_at)).toBe(24 * 3600 * 1000)
      // Reading the cursor is all planning does with state; no destination was touched.
      expect(filesUnder(dir).filter((file) => !file.startsWith("out/inc/") && !file.startsWith(".rivet_state"))).toEqual(["plan.json", "rivet.yaml"])

      // A row the plan's chunk ranges do not cover: the run reads the planned ranges, not new bounds.
      await sql.unsafe("INSERT INTO plan_orders VALUES (7000, '2025-06-01 00:00:00+00', 'after the plan')")
      const run = await runCli(["run", "-c", config, "--plan", path.join(dir, "plan.json"), "--json", "--verbose"])
      expect(run.code, run.stderr).toBe(0)
      const executed = executedStatements(run.stderr)
      const planned = byName(plan)
      for (const name of ["p_full", "p_inc", "p_chunk"]) expect(executed.get(name), name).toEqual(planned.get(name)!.statements)
      const pages = executed.get("p_keyset")!
      expect(pages[0]).toBe(planned.get("p_keyset")!.statements[0])
      expect(pages).toHaveLength(3)

      for (const [name, folder] of [["p_full", "full"], ["p_inc", "inc"], ["p_chunk", "chunk"], ["p_keyset", "keyset"]] as const) {
        const manifest = readManifest(path.join(dir, "out", folder))
        expect(manifest.parts.length, name).toBeGreaterThan(0)
        for (const part of manifest.parts) expect(part.path).toMatch(namingRegExp(planned.get(name)!.naming))
      }
      expect(readManifest(path.join(dir, "out/inc")).row_count).toBe(40)
      expect(readManifest(path.join(dir, "out/chunk")).row_count).toBe(5040)
      expect(readManifest(path.join(dir, "out/full")).row_count).toBe(5041)
    } finally {
      await sql.unsafe("DELETE FROM plan_orders WHERE id > 5000")
    }
  }, 180_000)

  it("estimates from catalog statistics: unknown for a table never analyzed, EXPLAIN for a query", async () => {
    const config = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: fresh, table: plan_fresh, destination: { type: local, path: out/fresh } }
  - { name: filtered, query: "select * from plan_orders where id <= 100", destination: { type: local, path: out/q } }
`)
    const result = await runCli(["plan", "-c", config, "--json"])
    expect(result.code, result.stderr).toBe(0)
    const shown = byName(JSON.parse(result.stdout) as PlanFile)
    expect(shown.get("fresh")!.estimated_rows).toBeNull()
    expect(shown.get("filtered")!.estimated_rows).toBeGreaterThan(50)
    expect(shown.get("filtered")!.estimated_rows).toBeLessThan(200)
    const human = await runCli(["plan", "-c", config])
    expect(human.stdout).toContain("unknown (no statistics: ANALYZE the table)")
  }, 120_000)

  it("refuses an expired plan, a plan of another config file, and a plan whose config changed", async () => {
    const yaml = `source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: c
    query: select * from plan_orders where id <= \${PLAN_MAX_ID}
    mode: chunked
    chunk_column: id
    chunk_size: 1000
    destination: { type: local, path: out }
`
    const config = configFile(yaml)
    const dir = path.dirname(config)
    const planPath = path.join(dir, "plan.json")
    const env = { PLAN_MAX_ID: "5000" }
    expect((await runCli(["plan", "-c", config, "-o", planPath], { env })).code).toBe(0)
    const plan = JSON.parse(fs.readFileSync(planPath, "utf8")) as PlanFile

    const refused = async (args: ReadonlyArray<string>, message: string, runEnv = env) => {
      const result = await runCli(["run", "-c", ...args], { env: runEnv })
      expect(result.code, result.stderr).toBe(1)
      expect(result.stderr).toContain(message)
      expect(result.stderr).toContain("Hint: run `rivet plan")
      expect(fs.existsSync(path.join(dir, "out"))).toBe(false)
    }

    const expired = path.join(dir, "expired.json")
    fs.writeFileSync(expired, JSON.stringify({ ...plan, expires_at: new Date(Date.now() - 1000).toISOString() }))
    await refused([config, "--plan", expired], "the plan expired at")

    const other = configFile(yaml)
    await refused([other, "--plan", planPath], `the plan was made from another config (${config})`)

    // The same file with another value substituted: only the plan's fingerprint can tell.
    await refused([config, "--plan", planPath], "the plan no longer matches the config", { PLAN_MAX_ID: "4000" })

    fs.writeFileSync(config, yaml.replace("chunk_size: 1000", "chunk_size: 500"))
    await refused([config, "--plan", planPath], "changed since the plan was made")

    fs.writeFileSync(config, yaml)
    const ok = await runCli(["run", "-c", config, "--plan", planPath], { env })
    expect(ok.code, ok.stderr).toBe(0)
    expect(readManifest(path.join(dir, "out")).row_count).toBe(5000)
  }, 180_000)

  it("refuses an incremental plan once another run moved the cursor", async () => {
    const config = configFile(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: moved, table: plan_orders, mode: incremental, cursor_column: id, format: ndjson, destination: { type: local, path: out } }
`)
    const dir = path.dirname(config)
    const planPath = path.join(dir, "plan.json")
    expect((await runCli(["run", "-c", config])).code).toBe(0)
    await sql.unsafe("INSERT INTO plan_orders VALUES (9001, now(), 'later')")
    try {
      expect((await runCli(["plan", "-c", config, "-o", planPath])).code).toBe(0)
      const before = filesUnder(path.join(dir, "out"))
      expect((await runCli(["run", "-c", config])).code).toBe(0)
      const after = filesUnder(path.join(dir, "out"))
      const result = await runCli(["run", "-c", config, "--plan", planPath])
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("cursor has moved since the plan was made (planned from id = 5000, now id = 9001)")
      expect(result.stderr).toContain("Hint: run `rivet plan")
      expect(filesUnder(path.join(dir, "out"))).toEqual(after)
      expect(after).not.toEqual(before)
    } finally {
      await sql.unsafe("DELETE FROM plan_orders WHERE id > 5000")
    }
  }, 120_000)

  it("plan --help shows an example", async () => {
    const help = await runCli(["plan", "--help"])
    expect(help.stdout).toContain("rivet plan -c export.yaml -o plan.json && rivet run -c export.yaml --plan plan.json")
  })
})
