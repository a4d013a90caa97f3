import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { exportMetrics, spreadOf } from "../../src/cli/run-metrics.js"
import type { StateError } from "../../src/core/errors.js"
import { sqliteStateLayer } from "../../src/state/sqlite.js"
import { STATE_FILE_NAME, StateStore } from "../../src/state/store.js"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import { postgresBackend } from "../state/support.js"

// The source's URL variable is never set: `rivet metrics` reads the state only.
const CONFIG = `source: { type: postgres, url_env: RIVET_METRICS_CLI_UNSET_URL }
exports:
  - { name: orders, table: orders, destination: { type: local, path: out/orders } }
  - { name: audit, table: audit, destination: { type: local, path: out/audit } }
`

const dirs: Array<string> = []
const backend = postgresBackend(testPgUrl())
afterAll(async () => {
  dirs.forEach((dir) => fs.rmSync(dir, { recursive: true, force: true }))
  await backend.teardown()
})

const freshConfig = () => {
  const config = writeConfig(CONFIG)
  dirs.push(path.dirname(config))
  return { config, stateFile: path.join(path.dirname(config), STATE_FILE_NAME) }
}

/** Durations of `orders`' successful runs, oldest first: 10 s … 100 s, 400 000 rows each. */
const DURATIONS_S = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]

/** Eleven finished runs of `orders` (the newest failed after 5 s) and one still running; nothing for `audit`. */
const seed = (layer: Layer.Layer<StateStore, StateError>) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const s = yield* StateStore
      const base = { exportName: "orders", mode: "full", status: "running", rows: 0, parts: 0, bytes: 0, checkpointed: false } as const
      for (const [day, seconds] of DURATIONS_S.entries()) {
        const runId = `orders_202612${String(day + 1).padStart(2, "0")}`
        const startedAt = `2026-12-${String(day + 1).padStart(2, "0")}T02:00:00.000Z`
        yield* s.beginRun({ ...base, runId, startedAt })
        yield* s.finishRun(runId, { status: "success", finishedAt: new Date(Date.parse(startedAt) + seconds * 1000).toISOString(), rows: 400_000, parts: 1, bytes: 1_048_576 })
      }
      yield* s.beginRun({ ...base, runId: "orders_failed", startedAt: "2026-12-11T02:00:00.000Z" })
      yield* s.finishRun("orders_failed", { status: "failed", finishedAt: "2026-12-11T02:00:05.000Z", rows: 0, parts: 0, bytes: 0, error: "boom" })
      yield* s.beginRun({ ...base, runId: "orders_running", startedAt: "2026-12-12T02:00:00.000Z" })
    }).pipe(Effect.provide(layer))
  )

describe("run metrics", () => {
  it("median, p90 and maximum by nearest rank", () => {
    expect(spreadOf([5, 1, 4, 2, 3, 10, 9, 8, 7, 6])).toEqual({ median: 5, p90: 9, max: 10 })
    expect(spreadOf([7])).toEqual({ median: 7, p90: 7, max: 7 })
    expect(spreadOf([])).toBeUndefined()
  })

  it("count only finished successful runs in the spread; a running run has no duration", () => {
    const metrics = exportMetrics("orders", [
      { runId: "r", exportName: "orders", mode: "full", status: "running", startedAt: "2026-12-01T00:00:00.000Z", rows: 5, parts: 0, bytes: 0, checkpointed: false },
      { runId: "f", exportName: "orders", mode: "full", status: "failed", startedAt: "2026-12-01T00:00:00.000Z", finishedAt: "2026-12-01T00:00:01.000Z", rows: 0, parts: 0, bytes: 0, checkpointed: false },
      { runId: "s", exportName: "orders", mode: "full", status: "success", startedAt: "2026-12-01T00:00:00.000Z", finishedAt: "2026-12-01T00:00:04.000Z", rows: 8000, parts: 1, bytes: 10, checkpointed: false }
    ])
    expect(metrics.runs.map((metric) => metric.durationMs)).toEqual([undefined, 1000, 4000])
    expect([metrics.succeeded, metrics.failed]).toEqual([1, 1])
    expect(metrics.durationMs).toEqual({ median: 4000, p90: 4000, max: 4000 })
    expect(metrics.rowsPerSecond?.median).toBe(2000)
  })
})

// Every CLI start boots Node; on a busy machine that takes seconds, hence the timeout.
describe("rivet metrics", { timeout: 120_000 }, () => {
  it("per export: the last N runs newest first with duration, rows/s and bytes, and the spread of successful durations", async () => {
    const { config, stateFile } = freshConfig()
    await seed(sqliteStateLayer(stateFile))
    const result = await runCli(["metrics", "-c", config, "--last", "11"])
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    const lines = result.stdout.split("\n")
    expect(lines[0]).toBe("orders: the last 11 runs, newest first")
    expect(lines[1]).toMatch(/^STARTED\s+STATUS\s+DURATION\s+ROWS\s+ROWS\/S\s+BYTES\s+MODE$/)
    expect(lines[2]).toMatch(/^2026-12-12T02:00:00Z\s+running\s+-\s+0\s+-\s+0 B\s+full$/)
    expect(lines[3]).toMatch(/^2026-12-11T02:00:00Z\s+failed\s+5\.0s\s+0\s+0\s+0 B\s+full$/)
    expect(lines[4]).toMatch(/^2026-12-10T02:00:00Z\s+success\s+1m 40\.0s\s+400,000\s+4\.0K\s+1\.0 MiB\s+full$/)
    // The oldest of the ten successful runs fell out of the last 11.
    expect(result.stdout).not.toContain("2026-12-01T")
    // Nine successful runs: the median is the 5th shortest, the 90th percentile (nearest rank) the 9th.
    expect(lines[13]).toBe("successful runs (9 of 11): duration median 1m 00.0s, p90 1m 40.0s, max 1m 40.0s; median 6.7K rows/s, 1.0 MiB")
    expect(lines.slice(14)).toEqual(["", "audit: no runs recorded yet", ""])
    const one = await runCli(["metrics", "-c", config, "-e", "audit"])
    expect(one.stdout).toBe("audit: no runs recorded yet\n")
  })

  it("--json is the same from the SQLite state and the PostgreSQL state (RIVET_STATE_URL)", async () => {
    const { config, stateFile } = freshConfig()
    await seed(sqliteStateLayer(stateFile))
    const target = await backend.fresh()
    await seed(target.layer())
    const fromSqlite = await runCli(["metrics", "-c", config, "-e", "orders", "--json", "--last", "3"])
    const fromPostgres = await runCli(["metrics", "-c", config, "-e", "orders", "--json", "--last", "3"], { env: { RIVET_STATE_URL: target.url } })
    expect(fromPostgres.stdout).toBe(fromSqlite.stdout)
    const [orders] = JSON.parse(fromSqlite.stdout) as Array<{ export_name: string; runs: Array<Record<string, unknown>>; summary: Record<string, unknown> }>
    expect(orders?.export_name).toBe("orders")
    expect(orders?.runs.map((run) => [run["status"], run["duration_ms"], run["rows_per_second"]])).toEqual([
      ["running", null, null],
      ["failed", 5000, 0],
      ["success", 100_000, 4000]
    ])
    expect(orders?.summary).toEqual({
      runs: 3,
      succeeded: 1,
      failed: 1,
      duration_ms: { median: 100_000, p90: 100_000, max: 100_000 },
      rows_per_second: { median: 4000, p90: 4000, max: 4000 },
      bytes: { median: 1_048_576, p90: 1_048_576, max: 1_048_576 }
    })
  })

  it("with no state file yet it says so for each export without creating the file; --last 0 is refused", async () => {
    const { config, stateFile } = freshConfig()
    const result = await runCli(["metrics", "-c", config])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("orders: no runs recorded yet\n\naudit: no runs recorded yet\n")
    expect(fs.existsSync(stateFile)).toBe(false)
    const zero = await runCli(["metrics", "-c", config, "--last", "0"])
    expect(zero.code).toBe(1)
    expect(zero.stderr).toContain("Error: --last: must be at least 1 (got 0)")
  })
})
