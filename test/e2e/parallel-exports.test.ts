import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExports } from "../../src/api.js"
import { testPgUrl } from "../support/pg.js"

// parallel_exports: N runs N exports at once. Each export's query sleeps on the server; the test counts the
// sleeping statements of this run's sessions (their own application_name) while the run goes on.

const APPLICATION = `rivet_parallel_${process.pid}`
let sql: postgres.Sql
let dir: string

beforeAll(() => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-parallel-exports-"))
})

afterAll(async () => {
  await sql.end()
  fs.rmSync(dir, { recursive: true, force: true })
})

/** The most statements of this test's sessions seen sleeping at once while `run` ran. */
const mostAtOnce = async (run: () => Promise<unknown>) => {
  let most = 0
  let done = false
  const watch = (async () => {
    while (!done) {
      const [row] = await sql.unsafe(
        `SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1 AND state = 'active' AND query LIKE '%pg_sleep%'`,
        [APPLICATION]
      )
      most = Math.max(most, Number(row?.["n"] ?? 0))
      await new Promise((resolve) => setTimeout(resolve, 25))
    }
  })()
  try {
    await run()
  } finally {
    done = true
    await watch
  }
  return most
}

const configOf = (parallel: number | boolean | undefined, name: string) => ({
  source: { type: "postgres", url: testPgUrl(), application_name: APPLICATION },
  ...(parallel === undefined ? {} : { parallel_exports: parallel }),
  exports: ["a", "b", "c"].map((id) => ({
    name: `${name}_${id}`,
    query: `SELECT '${id}' AS id, pg_sleep(1)::text AS slept`,
    format: "csv",
    destination: { type: "local", path: `${name}/${id}` }
  }))
})

describe("parallel_exports", () => {
  it("runs that many exports at once (one at a time without it); every export succeeds, results in config order", async () => {
    const alone = await mostAtOnce(() => runExports(configOf(undefined, "serial") as never, { configDir: dir }))
    expect(alone).toBe(1)
    let results: ReadonlyArray<{ exportName: string; status: string }> = []
    const most = await mostAtOnce(async () => {
      results = await runExports(configOf(2, "two") as never, { configDir: dir })
    })
    expect(most).toBe(2)
    expect(results.map((result) => [result.exportName, result.status])).toEqual([
      ["two_a", "success"],
      ["two_b", "success"],
      ["two_c", "success"]
    ])
    // The Rust rivet's `parallel_exports: true`: all of them at once.
    expect(await mostAtOnce(() => runExports(configOf(true, "all") as never, { configDir: dir }))).toBe(3)
  }, 60_000)
})
