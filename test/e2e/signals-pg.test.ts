import { type ChildProcess, spawn } from "node:child_process"
import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { testPgUrl } from "../support/pg.js"

// SIGTERM / SIGINT while rivet's statement waits on the server: the statement is cancelled (a PostgreSQL cancel
// request), the session closed, and the process exits at once with 143 / 130 — not when the lock is released.

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")
const SCHEMA = "pgconn_signals"
/**
 * The longest a signal may take to end the process. The bar is 1 s, and an idle machine exits in a few
 * hundred ms, but on a loaded 2-core machine scheduling the child, its cancel request and its exit can take longer.
 * What the bound must still catch: a statement left running, so that rivet's pool waits out its 5 s end timeout
 * (END_TIMEOUT_S in the postgres source) or the lock / the 60 s pg_sleep. 3.5 s stays clear of both.
 */
const EXIT_WITHIN_MS = 3_500

let sql: postgres.Sql
let root: string

beforeAll(async () => {
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "rivet-signals-pg-")))
  sql = postgres(testPgUrl(), { max: 4, onnotice: () => {} })
  await sql.unsafe(`
    DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE;
    CREATE SCHEMA ${SCHEMA};
    CREATE TABLE ${SCHEMA}.locked (id int PRIMARY KEY);
    INSERT INTO ${SCHEMA}.locked SELECT generate_series(1, 1000);
  `)
}, 60_000)

afterAll(async () => {
  if (root) fs.rmSync(root, { recursive: true, force: true })
  await sql?.unsafe(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
  await sql?.end()
})

/** Holds ACCESS EXCLUSIVE on the table in another session until `release` is called. */
const holdLock = async (table: string) => {
  let release: () => void = () => {}
  const released = new Promise<void>((resolve) => (release = resolve))
  let locked: () => void = () => {}
  const isLocked = new Promise<void>((resolve) => (locked = resolve))
  const done = sql.begin(async (tx) => {
    await tx.unsafe(`LOCK TABLE ${SCHEMA}.${table} IN ACCESS EXCLUSIVE MODE`)
    locked()
    await released
  })
  await isLocked
  return async () => {
    release()
    await done
  }
}

/** The sessions of this test's rivet process (by its application_name) in this database. */
const sessionsOf = (applicationName: string) =>
  sql.unsafe<Array<{ pid: number; state: string | null; wait_event_type: string | null; query: string }>>(
    `SELECT pid, state, wait_event_type, query FROM pg_stat_activity
      WHERE datname = current_database() AND application_name = $1`,
    [applicationName]
  )

const until = async (what: string, check: () => Promise<boolean>, timeoutMs: number) => {
  const deadline = Date.now() + timeoutMs
  while (Date.now() < deadline) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`)
}

interface Started {
  readonly child: ChildProcess
  readonly applicationName: string
  readonly output: { stdout: string; stderr: string }
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>
}

const startRivet = (name: string, exportBlock: Record<string, unknown>, args: ReadonlyArray<string>): Started => {
  const applicationName = `rivet-sig-${randomBytes(4).toString("hex")}`
  const dir = path.join(root, name)
  fs.mkdirSync(dir, { recursive: true })
  const config = path.join(dir, "rivet.yaml")
  const document = {
    source: { type: "postgres", url: testPgUrl(), schema: SCHEMA, lock_timeout_s: 0, statement_timeout_s: 0, application_name: applicationName },
    exports: [{ name: "locked", format: "csv", destination: { type: "local", path: "out" }, ...exportBlock }]
  }
  fs.writeFileSync(config, JSON.stringify(document, null, 2))
  const child = spawn(process.execPath, [BIN, "run", "-c", config, ...args], {
    cwd: dir,
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
    stdio: ["ignore", "pipe", "pipe"]
  })
  const output = { stdout: "", stderr: "" }
  child.stdout!.on("data", (chunk: Buffer) => (output.stdout += chunk.toString("utf8")))
  child.stderr!.on("data", (chunk: Buffer) => (output.stderr += chunk.toString("utf8")))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; at: number }>((resolve) =>
    child.on("close", (code, signal) => resolve({ code, signal, at: Date.now() }))
  )
  return { child, applicationName, output, exited }
}

/** Sends `signal` once rivet's session waits as `waiting` says, and returns how it ended. */
const interruptWhile = async (
  started: Started,
  signal: NodeJS.Signals,
  waiting: (session: { wait_event_type: string | null; query: string }) => boolean
) => {
  await until(
    "rivet's statement to wait on the server",
    async () => (await sessionsOf(started.applicationName)).some((session) => session.state === "active" && waiting(session)),
    30_000
  )
  const sentAt = Date.now()
  started.child.kill(signal)
  const exit = await started.exited
  return { ...exit, tookMs: exit.at - sentAt }
}

const expectNoSessionLeft = (applicationName: string) =>
  until("rivet's sessions to close", async () => (await sessionsOf(applicationName)).length === 0, 2_000)

const events = (stderr: string) =>
  stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)

describe("signals while a statement waits on the server", () => {
  it("SIGTERM during a lock wait (lock_timeout_s: 0) cancels it: exit 143 within seconds, an interrupted event, no session left", async () => {
    const unlock = await holdLock("locked")
    const started = startRivet("lock-term", { table: "locked" }, ["--json"])
    try {
      const exit = await interruptWhile(started, "SIGTERM", (session) => session.wait_event_type === "Lock")
      expect(exit.code, started.output.stderr).toBe(143)
      expect(exit.tookMs, started.output.stderr).toBeLessThanOrEqual(EXIT_WITHIN_MS)
      await expectNoSessionLeft(started.applicationName)
      const interrupted = events(started.output.stderr).filter((event) => event["event"] === "interrupted")
      expect(interrupted, started.output.stderr).toEqual([
        expect.objectContaining({ signal: "SIGTERM", exports: ["locked"], exit_code: 143 })
      ])
      expect(started.output.stderr).not.toMatch(/"event":"error"/)
      expect(fs.existsSync(path.join(root, "lock-term", "out", "_SUCCESS"))).toBe(false)
    } finally {
      // A rivet that ignored the signal must not outlive the test (nor keep waiting once the lock is released).
      if (started.child.exitCode === null) started.child.kill("SIGKILL")
      await unlock()
    }
  })

  it("SIGINT once during a lock wait: exit 130 within seconds, a summary line, no session left", async () => {
    const unlock = await holdLock("locked")
    const started = startRivet("lock-int", { table: "locked" }, [])
    try {
      const exit = await interruptWhile(started, "SIGINT", (session) => session.wait_event_type === "Lock")
      expect(exit.code, started.output.stderr).toBe(130)
      expect(exit.tookMs, started.output.stderr).toBeLessThanOrEqual(EXIT_WITHIN_MS)
      await expectNoSessionLeft(started.applicationName)
      expect(started.output.stderr).toMatch(/^rivet: interrupted by SIGINT after .*: 'locked' stopped: .* \(exit 130\)$/m)
    } finally {
      // A rivet that ignored the signal must not outlive the test (nor keep waiting once the lock is released).
      if (started.child.exitCode === null) started.child.kill("SIGKILL")
      await unlock()
    }
  })

  it("SIGTERM while a fetch runs a slow statement: cancelled, exit 143 within seconds, no session left", async () => {
    const started = startRivet("fetch-term", { query: "SELECT id, pg_sleep(60)::text AS slept FROM locked WHERE id = 1" }, ["--json"])
    try {
      const exit = await interruptWhile(started, "SIGTERM", (session) => session.query.includes("pg_sleep") && session.wait_event_type === "Timeout")
      expect(exit.code, started.output.stderr).toBe(143)
      expect(exit.tookMs, started.output.stderr).toBeLessThanOrEqual(EXIT_WITHIN_MS)
      await expectNoSessionLeft(started.applicationName)
      expect(events(started.output.stderr).map((event) => event["event"])).toContain("interrupted")
    } finally {
      if (started.child.exitCode === null) started.child.kill("SIGKILL")
    }
  })
})
