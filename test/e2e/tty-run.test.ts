import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { hasScript, runCli, runCliInTerminal, screenLines, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"

let sql: postgres.Sql
let config: string

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  // Enough rows that the export runs for a second or more (several redraws), analyzed so an estimate exists.
  await sql.unsafe(`
    DROP TABLE IF EXISTS tty_events;
    CREATE TABLE tty_events (id bigint PRIMARY KEY, kind text NOT NULL, payload text NOT NULL, at timestamptz NOT NULL);
    INSERT INTO tty_events SELECT i, 'kind' || (i % 7), md5(i::text) || md5((i * 7)::text), timestamptz '2026-01-01 00:00:00+00' + i * interval '1 second'
      FROM generate_series(1, 300000) AS i;
    ANALYZE tty_events;
    DROP TABLE IF EXISTS tty_small;
    CREATE TABLE tty_small (id int PRIMARY KEY);
    INSERT INTO tty_small SELECT generate_series(1, 10);
  `)
  config = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: tty_events
    table: tty_events
    format: parquet
    batch_size: 10000
    destination: { type: local, path: out/events }
  - name: tty_small
    table: tty_small
    mode: chunked
    chunk_size: 5
    format: csv
    destination: { type: local, path: out/small }
  - name: tty_stdout
    query: select i from generate_series(1, 3) as i
    format: csv
    destination: { type: stdout }
`)
})

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS tty_events, tty_small")
  await sql.end({ timeout: 5 })
  fs.rmSync(path.dirname(config), { recursive: true, force: true })
})

describe.skipIf(!hasScript)("rivet run on a terminal", { timeout: 60_000 }, () => {
  it("draws a bar, a percent and an ETA while an export runs, notices above the lines, then one summary table listing every export", async () => {
    const result = await runCliInTerminal(["run", "-c", config, "-e", "tty_events", "-e", "tty_small"])
    expect(result.code).toBe(0)
    // The live line of tty_events, redrawn in place: bar, percent of the ~300 000 estimated rows, ETA.
    expect(result.output).toMatch(/tty_events {2}[█░]{20} +\d{1,3}% {2}ETA (\d+s|…)/)
    expect(result.output).toMatch(/[█░]{20} +\d{1,3}% {2}ETA \d+s {2}[\d.,K]+\/~[\d.,K]+ rows/)
    expect(result.output).toContain("\x1b[") // redrawn in place
    const lines = screenLines(result.output)
    // A notice written while live lines are shown lands on a line of its own, above them.
    expect(lines).toContain("rivet: export 'tty_small': chunk_column not set: using the primary key 'id' (set chunk_column: to choose another)")
    const header = lines.findIndex((line) => /^EXPORT\s+STATUS\s+ROWS\s+FILES\s+BYTES\s+DURATION\s+OUTPUT$/.test(line))
    expect(header).toBeGreaterThanOrEqual(0)
    expect(lines[header + 1]).toMatch(/^tty_events\s+success\s+300,000\s+1\s+[\d.]+ (KiB|MiB)\s+\S+\s+\/\S+\/out\/events$/)
    expect(lines[header + 2]).toMatch(/^tty_small\s+success\s+10\s+2\s+/)
    expect(lines[header + 3]).toMatch(/^2 exports done in [\d.]+s: 300,010 rows, /)
    // No block per export: that is --verbose.
    expect(result.output).not.toContain("── tty_events")
  })

  it("an export writing its rows to the terminal gets the plain lines, not live lines drawn over the rows", async () => {
    const result = await runCliInTerminal(["run", "-c", config, "-e", "tty_stdout"])
    expect(result.code).toBe(0)
    expect(result.output).toContain("i\r\n1\r\n2\r\n3\r\n")
    expect(result.output).toContain("── tty_stdout")
    expect(result.output).not.toContain("\x1b")
  })

  it("piped, the output has no ANSI escape code and keeps the plain lines and blocks", async () => {
    const result = await runCli(["run", "-c", config, "-e", "tty_small"])
    expect(result.code).toBe(0)
    expect(result.stderr).toContain("── tty_small")
    expect(result.stderr + result.stdout).not.toContain("\x1b")
  })
})
