import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import Database from "better-sqlite3"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import type { S3TestServer } from "../support/s3/server.js"
import { serverEnv, startWithBucket } from "./s3-support.js"
import { idsOf, snapshot } from "./crash-support.js"

// Runs of one export that overlap — a paused run, a slow `_SUCCESS`, a `--resume` beside a live run, a crashed
// holder — against the real CLI, PostgreSQL, the local sink and the S3 test server. The lease lets one run at a
// time publish: every row ends in exactly one file that a published manifest lists, and the cursor never goes back.

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")
const HOLD_PRELOAD = pathToFileURL(path.resolve(import.meta.dirname, "../fixtures/hold-rename-preload.mjs")).href

/**
 * The environment that makes the CLI hold the rename of `name` (before or after it) until the test calls `release`,
 * however long the test takes to do its part meanwhile.
 */
const holdRename = (name = "_SUCCESS", when: "before" | "after" = "before") => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-hold-"))
  dirs.push(dir)
  const releaseFile = path.join(dir, "release")
  return {
    env: {
      NODE_OPTIONS: `--import=${HOLD_PRELOAD}`,
      RIVET_TEST_HOLD_UNTIL: releaseFile,
      RIVET_TEST_HOLD_NAME: name,
      RIVET_TEST_HOLD_WHEN: when
    },
    release: () => fs.writeFileSync(releaseFile, "")
  }
}
const TABLE = "overlap_src"

let sql: postgres.Sql
const dirs: Array<string> = []

/** Rows [from, to] of the source: wide enough that a run of 30 000 rows writes several 1 MiB parts. */
const insertRows = (from: number, to: number) =>
  sql.unsafe(`INSERT INTO ${TABLE}
    SELECT i, (SELECT string_agg(md5((i * 8 + k)::text), '') FROM generate_series(0, 7) AS k), (i % 1000) / 10.0, 'n' || i
    FROM generate_series(${from}, ${to}) AS i`)

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (id bigint PRIMARY KEY, label text NOT NULL, amount numeric(12,2) NOT NULL, note text)`)
}, 60_000)

afterAll(async () => {
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const resetTable = async (rows: number) => {
  await sql.unsafe(`TRUNCATE ${TABLE}`)
  await insertRows(1, rows)
}

const CSV_SHAPE = {
  header: "id,label,amount,note",
  isCompleteRow: (fields: ReadonlyArray<string>) => fields.length === 4 && /^\d+$/.test(fields[0]!) && /^[0-9a-f]{256}$/.test(fields[1]!)
}

/** A config whose one export writes CSV parts of ~1 MiB; `mode` is YAML flow-style keys. */
const configWith = (exportName: string, mode: string, destination = "{ type: local, path: out }"): string => {
  const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: ${exportName}, table: ${TABLE}, batch_size: 1000, max_file_size: 1MiB, format: csv, destination: ${destination}, ${mode} }
`)
  dirs.push(path.dirname(file))
  return file
}

interface Started {
  readonly child: ChildProcess
  readonly stderr: () => string
  readonly exited: Promise<number | null>
  readonly done: () => boolean
}

/** Starts `rivet <args>` in the background. */
const start = (args: ReadonlyArray<string>, env: Record<string, string> = {}): Started => {
  const child = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...env },
    stdio: ["ignore", "ignore", "pipe"]
  })
  let stderr = ""
  let ended = false
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const exited = new Promise<number | null>((resolve) =>
    child.on("close", (code) => {
      ended = true
      resolve(code)
    })
  )
  return { child, stderr: () => stderr, exited, done: () => ended }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** Polls until `ready` holds; fails when the run ends first (a pause that never happened proves nothing). */
const waitFor = async (run: Started, what: string, ready: () => boolean, timeoutMs = 60_000) => {
  const until = Date.now() + timeoutMs
  while (!ready()) {
    if (run.done()) throw new Error(`the run ended before ${what}:\n${run.stderr()}`)
    if (Date.now() > until) throw new Error(`timed out waiting for ${what}:\n${run.stderr()}`)
    await sleep(5)
  }
}

/** Pauses the run (SIGSTOP) once its first data file is under its final name: its snapshot is taken, it is mid-export. */
/** Whether a process holds the state file's write lock (a transaction the stopped run was in the middle of). */
const stateLocked = (stateFile: string): boolean => {
  if (!fs.existsSync(stateFile)) return false
  const db = new Database(stateFile, { timeout: 0 })
  try {
    db.exec("BEGIN IMMEDIATE; ROLLBACK")
    return false
  } catch {
    return true
  } finally {
    db.close()
  }
}

/**
 * Stops the run once it wrote its first part, at a moment it holds no write lock on the state file: stopped inside
 * a state transaction, it would make the other run of the test fail on the locked file instead of on its lease.
 */
const pauseAfterFirstPart = async (run: Started, out: string) => {
  await waitFor(run, "its first part", () => snapshot(out).finals.length >= 1)
  const stateFile = path.join(path.dirname(out), ".rivet_state.db")
  for (let attempt = 0; ; attempt++) {
    run.child.kill("SIGSTOP")
    if (!stateLocked(stateFile) || attempt >= 200) return
    run.child.kill("SIGCONT")
    await sleep(5)
  }
}

interface StateRow {
  readonly cursor: string | undefined
  readonly runs: ReadonlyArray<{ run_id: string; status: string }>
  readonly leases: ReadonlyArray<Record<string, unknown>>
}

const stateOf = (config: string): StateRow => {
  const db = new Database(path.join(path.dirname(config), ".rivet_state.db"), { readonly: true })
  try {
    const cursor = db.prepare("SELECT value FROM rivet_cursors").pluck().get() as string | undefined
    const runs = db.prepare("SELECT run_id, status FROM rivet_runs ORDER BY started_at, run_id").all() as StateRow["runs"]
    const leases = db.prepare("SELECT * FROM rivet_leases").all() as StateRow["leases"]
    return { cursor, runs, leases }
  } finally {
    db.close()
  }
}

interface Published {
  readonly runId: string
  readonly parts: ReadonlyArray<string>
  readonly cursor: string | undefined
}

/** The manifest now published under `out` (checked against `_SUCCESS`), with its parts' ids read completely. */
const publishedAt = async (out: string): Promise<Published & { readonly ids: ReadonlyArray<number> }> => {
  const bytes = fs.readFileSync(path.join(out, "manifest.json"))
  const { createHash } = await import("node:crypto")
  expect(fs.readFileSync(path.join(out, "_SUCCESS"), "utf8")).toBe(`sha256:${createHash("sha256").update(bytes).digest("hex")}\n`)
  const manifest = JSON.parse(bytes.toString("utf8")) as {
    run_id: string
    parts: Array<{ path: string; rows: number }>
    source: { cursor?: { value: string } }
  }
  const ids: Array<number> = []
  for (const part of manifest.parts) {
    const partIds = await idsOf(path.join(out, part.path), CSV_SHAPE)
    expect(partIds.length, part.path).toBe(part.rows)
    ids.push(...partIds)
  }
  return { runId: manifest.run_id, parts: manifest.parts.map((part) => part.path), cursor: manifest.source.cursor?.value, ids }
}

/** Every id of 1..n in exactly one file of the published manifests, none listed twice. */
const expectEachRowOnce = (manifests: ReadonlyArray<{ ids: ReadonlyArray<number> }>, n: number) => {
  const seen = new Map<number, number>()
  for (const manifest of manifests) for (const id of manifest.ids) seen.set(id, (seen.get(id) ?? 0) + 1)
  const duplicated = [...seen].filter(([, count]) => count > 1).map(([id]) => id)
  const missing = Array.from({ length: n }, (_, i) => i + 1).filter((id) => !seen.has(id))
  expect({ duplicated: duplicated.slice(0, 10), missing: missing.slice(0, 10), total: seen.size }).toEqual({
    duplicated: [],
    missing: [],
    total: n
  })
}

describe("overlapping runs of one export (local)", () => {
  it("a paused run holds the export: a second run refuses naming it (exit 2), --wait waits and then continues from its cursor", async () => {
    await resetTable(30_000)
    const config = configWith("overlap_paused", "mode: incremental, cursor_column: id")
    const out = path.join(path.dirname(config), "out")
    const a = start(["run", "-c", config])
    try {
      await pauseAfterFirstPart(a, out)
      const holder = stateOf(config).leases[0]!
      expect(holder).toMatchObject({ lease_key: "overlap_paused", export_name: "overlap_paused", pid: a.child.pid, host: os.hostname() })

      const refused = await runCli(["run", "-c", config])
      expect(refused.code, refused.stderr).toBe(2)
      expect(refused.stderr).toContain(`export 'overlap_paused' is being run by run '${String(holder["run_id"])}' (pid ${a.child.pid} on ${os.hostname()}), started `)
      expect(refused.stderr).toMatch(/started \d+ s ago \(last heartbeat \d+ s ago\)/)
      expect(refused.stderr).toContain("--wait")
      const shown = await runCli(["state", "show", "-c", config])
      expect(shown.stdout).toContain(`overlap_paused is being run by run '${String(holder["run_id"])}' (pid ${a.child.pid} on ${os.hostname()}) since `)
      const shownJson = JSON.parse((await runCli(["state", "show", "-c", config, "--json"])).stdout) as Array<{ lease: unknown }>
      expect(shownJson[0]?.lease).toMatchObject({ run_id: holder["run_id"], pid: a.child.pid, host: os.hostname() })

      await insertRows(30_001, 31_000) // written while A is paused: A's snapshot does not have them
      const b = start(["run", "-c", config, "--wait", "60s"])
      await waitFor(b, "B to wait", () => b.stderr().includes("waiting up to"))
      expect(b.stderr()).toContain(`for run '${String(holder["run_id"])}' (pid ${a.child.pid} on ${os.hostname()}) to finish`)
      await sleep(1_500)
      expect(b.done()).toBe(false) // still waiting: A holds the lease
      a.child.kill("SIGCONT")
      expect(await a.exited, a.stderr()).toBe(0)
      const first = await publishedAt(out)
      expect(first.cursor).toBe("30000")

      expect(await b.exited, b.stderr()).toBe(0)
      const second = await publishedAt(out)
      expect(second.runId).not.toBe(first.runId)
      expect(second.ids[0]).toBe(30_001)
      expectEachRowOnce([first, second], 31_000)
      const state = stateOf(config)
      expect(state.cursor).toBe("31000")
      expect(state.runs.map((run) => run.status)).toEqual(["success", "success"])
      expect(state.leases).toEqual([]) // released by both
      // No data file outside the two manifests.
      expect([...snapshot(out).finals].sort()).toEqual([...first.parts, ...second.parts].sort())
    } finally {
      a.child.kill("SIGCONT")
      if (!a.done()) a.child.kill("SIGKILL")
    }
  }, 180_000)

  it("a run whose _SUCCESS is slow still holds the export: the overlapping run refuses, and runs after it from its cursor", async () => {
    await resetTable(20_000)
    const config = configWith("overlap_slow_success", "mode: incremental, cursor_column: id")
    const out = path.join(path.dirname(config), "out")
    const hold = holdRename()
    const b = start(["run", "-c", config], hold.env)
    try {
      await waitFor(b, "its _SUCCESS", () => b.stderr().includes("hold-rename-preload: holding _SUCCESS before"))
      await insertRows(20_001, 21_000)
      const a = await runCli(["run", "-c", config])
      hold.release()
      expect(a.code, a.stderr).toBe(2)
      expect(a.stderr).toContain("export 'overlap_slow_success' is being run by run 'overlap_slow_success_")
      expect(await b.exited, b.stderr()).toBe(0)
      const first = await publishedAt(out)
      const again = await runCli(["run", "-c", config])
      expect(again.code, again.stderr).toBe(0)
      const second = await publishedAt(out)
      expectEachRowOnce([first, second], 21_000)
      expect(stateOf(config).cursor).toBe("21000")
    } finally {
      if (!b.done()) b.child.kill("SIGKILL")
    }
  }, 180_000)

  it("--resume beside the live checkpointed run it would continue is refused (exit 2), naming the holder", async () => {
    await resetTable(30_000)
    const config = configWith("overlap_resume", "mode: chunked, chunk_size: 5000, parallel: 1, chunk_checkpoint: true")
    const out = path.join(path.dirname(config), "out")
    const a = start(["run", "-c", config])
    try {
      await pauseAfterFirstPart(a, out)
      const resumed = await runCli(["run", "-c", config, "--resume"])
      expect(resumed.code, resumed.stderr).toBe(2)
      expect(resumed.stderr).toContain(`export 'overlap_resume' is being run by run 'overlap_resume_`)
      expect(resumed.stderr).toContain(`(pid ${a.child.pid} on ${os.hostname()})`)
      expect(resumed.stderr).toContain("--resume continues a run only once its process has stopped")
      expect(resumed.stderr).not.toMatch(/continue it with `rivet run .*--resume`/)
      const plain = await runCli(["run", "-c", config])
      expect(plain.code, plain.stderr).toBe(2)
      expect(plain.stderr).not.toContain("--resume`") // no hint to resume a run that is still running
      a.child.kill("SIGCONT")
      expect(await a.exited, a.stderr()).toBe(0)
      const published = await publishedAt(out)
      expectEachRowOnce([published], 30_000)
      expect([...snapshot(out).finals].sort()).toEqual([...published.parts].sort()) // no duplicate chunk files
    } finally {
      a.child.kill("SIGCONT")
      if (!a.done()) a.child.kill("SIGKILL")
    }
  }, 180_000)

  it("an expired lease (holder stalled past its time to live) is taken over with a notice; the stale holder publishes nothing", async () => {
    await resetTable(30_000)
    const config = configWith("overlap_expired", "mode: incremental, cursor_column: id")
    const out = path.join(path.dirname(config), "out")
    const env = { RIVET_LEASE_TTL: "3s" }
    const a = start(["run", "-c", config], env)
    try {
      await pauseAfterFirstPart(a, out)
      const aRun = String(stateOf(config).leases[0]!["run_id"])
      const aParts = new Set(snapshot(out).finals)
      await sleep(3_500) // A's lease expires while it is stopped
      const b = await runCli(["run", "-c", config, "--json"], { env })
      expect(b.code, b.stderr).toBe(0)
      const warnings = b.stderr.split("\n").filter((line) => line.includes('"event":"warning"'))
      expect(warnings.join("\n")).toContain(`took over the expired lease of run '${aRun}' (pid ${a.child.pid} on ${os.hostname()})`)
      const published = await publishedAt(out)

      a.child.kill("SIGCONT")
      const aCode = await a.exited
      expect(aCode, a.stderr()).toBe(2)
      expect(a.stderr()).toContain("this run lost the lease on export 'overlap_expired'")
      // B's publish stands: manifest, _SUCCESS and cursor are B's; A's files are listed by no manifest.
      const after = await publishedAt(out)
      expect(after.runId).toBe(published.runId)
      expectEachRowOnce([after], 30_000)
      for (const part of aParts) expect(after.parts).not.toContain(part)
      const state = stateOf(config)
      expect(state.cursor).toBe("30000")
      expect(state.runs.find((run) => run.run_id === aRun)?.status).toBe("failed")
      expect(state.leases).toEqual([])
    } finally {
      a.child.kill("SIGCONT")
      if (!a.done()) a.child.kill("SIGKILL")
    }
  }, 180_000)

  it("the state file locked by another connection at the final write: retried, exit 0, the run recorded as a success", async () => {
    await resetTable(20_000)
    const config = configWith("overlap_locked_state", "mode: incremental, cursor_column: id")
    const stateFile = path.join(path.dirname(config), ".rivet_state.db")
    const hold = holdRename()
    const b = start(["run", "-c", config], hold.env)
    let lock: Database.Database | undefined
    try {
      // Right before _SUCCESS: the next state write is the run's final one (finishRun). Held for 12 s, as in the
      // report this reproduces (the run used to publish, then exit 1 with the run recorded failed).
      await waitFor(b, "its _SUCCESS", () => b.stderr().includes("hold-rename-preload: holding _SUCCESS before"))
      lock = new Database(stateFile, { timeout: 10_000 })
      lock.exec("BEGIN EXCLUSIVE")
      hold.release()
      await sleep(12_000)
      expect(b.done()).toBe(false)
      lock.exec("COMMIT")
      expect(await b.exited, b.stderr()).toBe(0)
      const state = stateOf(config)
      expect(state.runs.map((run) => run.status)).toEqual(["success"])
      expect(state.cursor).toBe("20000")
    } finally {
      if (lock?.inTransaction) lock.exec("ROLLBACK")
      lock?.close()
      if (!b.done()) b.child.kill("SIGKILL")
    }
  }, 180_000)

  it("a manifest.json replaced before _SUCCESS is noticed: no _SUCCESS over another run's manifest, exit 3", async () => {
    await resetTable(5_000)
    const config = configWith("overlap_foreign_manifest", "mode: incremental, cursor_column: id")
    const out = path.join(path.dirname(config), "out")
    const hold = holdRename("manifest.json", "after")
    const b = start(["run", "-c", config], hold.env)
    try {
      await waitFor(b, "its manifest", () => b.stderr().includes("hold-rename-preload: holding manifest.json after"))
      const foreign = `${JSON.stringify({ manifest_version: 1, run_id: "someone_else", parts: [] }, null, 2)}\n`
      fs.writeFileSync(path.join(out, "manifest.json"), foreign)
      hold.release()
      expect(await b.exited, b.stderr()).toBe(3)
      expect(b.stderr()).toContain("manifest.json at ")
      expect(b.stderr()).toContain("is no longer the one run 'overlap_foreign_manifest_")
      expect(b.stderr()).toContain("(it now holds run 'someone_else'), so this run did not write _SUCCESS")
      expect(fs.existsSync(path.join(out, "_SUCCESS"))).toBe(false)
      expect(fs.readFileSync(path.join(out, "manifest.json"), "utf8")).toBe(foreign)
      const state = stateOf(config)
      expect(state.cursor).toBeUndefined() // not published: the cursor stays
      expect(state.runs.map((run) => run.status)).toEqual(["failed"])
    } finally {
      if (!b.done()) b.child.kill("SIGKILL")
    }
  }, 120_000)

  it("state that cannot be written after publishing: exit 2, saying the run is published and what the next run does", async () => {
    await resetTable(5_000)
    const config = configWith("overlap_state_gone", "mode: incremental, cursor_column: id")
    const out = path.join(path.dirname(config), "out")
    const hold = holdRename()
    const b = start(["run", "-c", config], hold.env)
    try {
      await waitFor(b, "its _SUCCESS", () => b.stderr().includes("hold-rename-preload: holding _SUCCESS before"))
      // A state that is broken for good, not locked for a while: the run journal's table is gone.
      const db = new Database(path.join(path.dirname(config), ".rivet_state.db"))
      try {
        db.exec("ALTER TABLE rivet_runs RENAME TO rivet_runs_moved")
      } finally {
        db.close()
      }
      hold.release()
      expect(await b.exited, b.stderr()).toBe(2)
      const stderr = b.stderr()
      expect(stderr).toMatch(/run 'overlap_state_gone_[^']+' is published \(manifest\.json and _SUCCESS written at [^)]+\) but its state was not updated: /)
      expect(stderr).toContain("the stored cursor stays at none (it exports every row), so the next run exports this run's rows again")
      expect(stderr).not.toContain("lost the lease")
      expect((await publishedAt(out)).ids).toHaveLength(5_000) // the publish itself stands
    } finally {
      if (!b.done()) b.child.kill("SIGKILL")
    }
  }, 120_000)
})

describe("overlapping runs of one export with the state in PostgreSQL (RIVET_STATE_URL)", () => {
  it("the lease lives in the shared state: a second run refuses naming the paused holder; after it, one more run continues", async () => {
    await resetTable(30_000)
    const schema = `rivet_overlap_${process.pid}`
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`)
    const env = { RIVET_STATE_URL: `${testPgUrl()}${testPgUrl().includes("?") ? "&" : "?"}search_path=${schema}` }
    const config = configWith("overlap_pg_state", "mode: incremental, cursor_column: id")
    const out = path.join(path.dirname(config), "out")
    const a = start(["run", "-c", config], env)
    try {
      await pauseAfterFirstPart(a, out)
      const [lease] = await sql.unsafe(`SELECT run_id, pid, host FROM ${schema}.rivet_leases`)
      expect(lease).toMatchObject({ pid: a.child.pid, host: os.hostname() })
      const refused = await runCli(["run", "-c", config], { env })
      expect(refused.code, refused.stderr).toBe(2)
      expect(refused.stderr).toContain(`export 'overlap_pg_state' is being run by run '${String(lease!["run_id"])}' (pid ${a.child.pid} on ${os.hostname()})`)
      await insertRows(30_001, 30_500)
      a.child.kill("SIGCONT")
      expect(await a.exited, a.stderr()).toBe(0)
      const first = await publishedAt(out)
      const again = await runCli(["run", "-c", config], { env })
      expect(again.code, again.stderr).toBe(0)
      const second = await publishedAt(out)
      expectEachRowOnce([first, second], 30_500)
      const [cursor] = await sql.unsafe(`SELECT value FROM ${schema}.rivet_cursors`)
      expect(cursor?.["value"]).toBe("30500")
      expect(await sql.unsafe(`SELECT * FROM ${schema}.rivet_leases`)).toHaveLength(0)
    } finally {
      a.child.kill("SIGCONT")
      if (!a.done()) a.child.kill("SIGKILL")
      await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
    }
  }, 180_000)

  it("--wait with something that is not a duration is a usage error naming the option", async () => {
    const config = configWith("overlap_bad_wait", "mode: full")
    const result = await runCli(["run", "-c", config, "--wait", "soon"])
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("--wait")
    expect(result.stderr).toContain('invalid duration "soon"')
  })
})

describe("overlapping runs of one export (S3)", () => {
  let server: S3TestServer
  beforeAll(async () => {
    server = await startWithBucket("overlap")
  })
  afterAll(() => server?.stop())

  it("a run whose _SUCCESS PUT stalls holds the export; the overlapping run refuses, then runs after it", async () => {
    await resetTable(20_000)
    const destination = JSON.stringify({ type: "s3", bucket: "overlap", prefix: "inc/", region: server.region, endpoint: server.endpoint })
    const config = configWith("overlap_s3", "mode: incremental, cursor_column: id", destination)
    const env = serverEnv(server)
    // The stall must outlast the start of the overlapping run (a CLI process: several seconds on a loaded machine),
    // so it ends when that run has refused, and at the latest below the S3 client's timeout.
    server.faults.add({ operation: "PutObject", keyPattern: /_SUCCESS$/, respond: { stallMs: 15_000 }, times: 1 })
    const b = start(["run", "-c", config], env)
    try {
      await waitFor(b, "its _SUCCESS PUT", () =>
        server.requests().some((request) => request.operation === "PutObject" && request.path.endsWith("/_SUCCESS") && request.fault === "stall")
      )
      await insertRows(20_001, 21_000)
      const a = await runCli(["run", "-c", config], { env })
      expect(a.code, a.stderr).toBe(2)
      expect(a.stderr).toContain("export 'overlap_s3' is being run by run 'overlap_s3_")
      expect(b.done()).toBe(false)
      server.releaseStalls()
      expect(await b.exited, b.stderr()).toBe(0)
      const first = await s3Published(server)
      const again = await runCli(["run", "-c", config], { env })
      expect(again.code, again.stderr).toBe(0)
      const second = await s3Published(server)
      expect(second.runId).not.toBe(first.runId)
      expectEachRowOnce([first, second], 21_000)
      expect(stateOf(config).cursor).toBe("21000")
      const keys = (await server.listObjects("overlap", "inc/")).map((object) => object.key.slice("inc/".length))
      expect(keys.filter((key) => key.endsWith(".csv")).sort()).toEqual([...first.parts, ...second.parts].sort())
    } finally {
      server.faults.clear()
      if (!b.done()) b.child.kill("SIGKILL")
    }
  }, 180_000)
})

/** The manifest published under `inc/` on the S3 test server, `_SUCCESS` checked, with its parts' ids. */
const s3Published = async (server: S3TestServer) => {
  const { createHash } = await import("node:crypto")
  const bytes = await server.getObject("overlap", "inc/manifest.json")
  const success = new TextDecoder().decode(await server.getObject("overlap", "inc/_SUCCESS"))
  expect(success).toBe(`sha256:${createHash("sha256").update(bytes).digest("hex")}\n`)
  const manifest = JSON.parse(new TextDecoder().decode(bytes)) as { run_id: string; parts: Array<{ path: string; rows: number }> }
  const ids: Array<number> = []
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-overlap-s3-"))
  dirs.push(dir)
  for (const part of manifest.parts) {
    const file = path.join(dir, part.path)
    fs.writeFileSync(file, await server.getObject("overlap", `inc/${part.path}`))
    const partIds = await idsOf(file, CSV_SHAPE)
    expect(partIds.length, part.path).toBe(part.rows)
    ids.push(...partIds)
  }
  return { runId: manifest.run_id, parts: manifest.parts.map((part) => part.path), ids }
}
