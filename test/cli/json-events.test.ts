import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"

let sql: postgres.Sql
const configs: Array<string> = []

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS json_events_t;
    CREATE TABLE json_events_t (id bigint PRIMARY KEY, v text);
    INSERT INTO json_events_t SELECT i, 'v' || i FROM generate_series(1, 3000) AS i;
  `)
})

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS json_events_t")
  await sql.end()
  for (const file of configs) fs.rmSync(path.dirname(file), { recursive: true, force: true })
})

const config = (exportYaml: string) => {
  const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }\nexports:\n${exportYaml}`)
  configs.push(file)
  return file
}

const events = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => line.length > 0)
    .map((line) => JSON.parse(line) as Record<string, unknown>)

describe("rivet run --json", () => {
  it("writes only JSON events on stderr: run_started, warning, part_committed, export_finished", async () => {
    const file = config(`  - { name: j, table: json_events_t, mode: chunked, chunk_size: 1000, format: csv, destination: { type: local, path: out } }\n`)
    const result = await runCli(["run", "-c", file, "--json"])
    expect(result.code).toBe(0)
    const list = events(result.stderr)
    const names = list.map((event) => event["event"])
    expect(names[0]).toBe("warning") // chunk_column defaulted to the primary key
    expect(names).toContain("run_started")
    expect(names.filter((name) => name === "part_committed")).toHaveLength(3)
    expect(list.at(-1)).toMatchObject({ event: "export_finished", export: "j", status: "success", rows: 3000, files: 3 })
    for (const event of list) expect(typeof event["time"]).toBe("string")
  })

  it("reports failures as error events with the exit code", async () => {
    const file = config(`  - { name: j, table: no_such_table, destination: { type: local, path: out } }\n`)
    const result = await runCli(["run", "-c", file, "--json"])
    expect(result.code).toBe(1)
    const error = events(result.stderr).find((event) => event["event"] === "error")
    expect(error).toMatchObject({ kind: "SourceError", exit_code: 1 })
    expect(String(error?.["message"])).toContain("no_such_table")
  })

  it("reports config errors as error events with their path", async () => {
    const file = config(`  - { name: j, table: json_events_t, mode: chunked, chunk_sise: 5, destination: { type: local, path: out } }\n`)
    const result = await runCli(["run", "-c", file, "--json"])
    expect(result.code).toBe(1)
    expect(events(result.stderr)).toEqual([
      expect.objectContaining({ event: "error", kind: "ConfigError", path: "exports[0].chunk_sise (line 3)", exit_code: 1 })
    ])
  })
})

describe("rivet completions", () => {
  it.each(["bash", "zsh", "fish"])("prints a %s completion script naming the commands", async (shell) => {
    const result = await runCli(["completions", shell])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("rivet")
    expect(result.stdout).toContain("run")
    expect(result.stdout).toContain("doctor")
  })
})
