import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, describe, expect, it } from "vitest"
import { stateLayerFor, stateLocationFor } from "../../src/state/layer.js"
import { LATEST_SCHEMA_VERSION } from "../../src/state/migrations.js"
import { postgresStateLayer } from "../../src/state/postgres.js"
import { sqliteStateLayer, toStateError } from "../../src/state/sqlite.js"
import { STATE_FILE_NAME, StateStore } from "../../src/state/store.js"
import { testPgUrl } from "../support/pg.js"
import { failureOf, postgresBackend, withStore } from "./support.js"

const tempDir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-state-backends-"))
afterAll(() => fs.rmSync(tempDir, { recursive: true, force: true }))

const setCursor = (value: string) =>
  Effect.gen(function* () {
    const s = yield* StateStore
    const runId = `run-${value}-${Math.random()}`
    yield* s.beginRun({ runId, exportName: "orders", mode: "incremental", startedAt: new Date().toISOString(), status: "running", rows: 0, parts: 0, bytes: 0, checkpointed: false })
    yield* s.finishRun(runId, { status: "success", finishedAt: new Date().toISOString(), rows: 1, parts: 0, bytes: 0 }, { cursor: { column: "id", value, type: "int64" } })
    return yield* s.cursor("orders")
  })

describe("SQLite backend", () => {
  it("a native module built for another Node.js says to rebuild it, not that the directory is read-only", () => {
    const cause = Object.assign(
      // Node's own wording, line breaks included.
      new Error(
        "The module 'better_sqlite3.node'\nwas compiled against a different Node.js version using\nNODE_MODULE_VERSION 115. This version of Node.js requires\nNODE_MODULE_VERSION 127. Please try re-compiling or re-installing\nthe module (for instance, using `npm rebuild` or `npm install`)."
      ),
      { code: "ERR_DLOPEN_FAILED" }
    )
    const error = toStateError("/srv/.rivet_state.db", cause)
    expect(error.message).toContain("cannot load SQLite (the better-sqlite3 native module) for the state file /srv/.rivet_state.db")
    expect(error.message).toContain("'better_sqlite3.node' was compiled against a different Node.js version using NODE_MODULE_VERSION 115.")
    expect(error.message).not.toMatch(/[\r\n]/)
    expect(error.hint).toContain("npm rebuild better-sqlite3")
    expect(error.hint).toContain(process.version)
    expect(error.hint).not.toContain("read-only")
  })

  it("creates the file on first use, in WAL mode with foreign keys on", async () => {
    const file = path.join(tempDir, "first-use.db")
    expect(fs.existsSync(file)).toBe(false)
    const result = await withStore(sqliteStateLayer(file), Effect.map(StateStore, (s) => s.location))
    expect(result).toBe(file)
    expect(fs.existsSync(file)).toBe(true)
    const db = new Database(file)
    try {
      expect(db.pragma("journal_mode", { simple: true })).toBe("wal")
    } finally {
      db.close()
    }
  })

  it("works in memory, and two in-memory stores are independent", async () => {
    expect(Option.getOrThrow(await withStore(sqliteStateLayer(":memory:"), setCursor("7"))).value).toBe("7")
    const other = await withStore(sqliteStateLayer(":memory:"), Effect.flatMap(StateStore, (s) => s.cursor("orders")))
    expect(other).toEqual(Option.none())
  })

  it("two processes' worth of concurrent opens migrate once and both write", async () => {
    const file = path.join(tempDir, "concurrent.db")
    const both = await Promise.all([withStore(sqliteStateLayer(file), setCursor("1")), withStore(sqliteStateLayer(file), setCursor("2"))])
    expect(both.map((cursor) => Option.isSome(cursor))).toEqual([true, true])
  })

  it("an unwritable location names the file and hints RIVET_STATE_URL", async () => {
    const error = await failureOf(sqliteStateLayer("/proc/rivet-state-test.db"), StateStore)
    expect(error.message).toContain("/proc/rivet-state-test.db")
    expect(error.message).toContain("not writable")
    expect(error.hint).toContain("RIVET_STATE_URL")
  })

  it("a missing directory is an error, not a silently created tree", async () => {
    const file = path.join(tempDir, "missing", "state.db")
    const error = await failureOf(sqliteStateLayer(file), StateStore)
    expect(error.message).toContain("does not exist")
    expect(fs.existsSync(path.dirname(file))).toBe(false)
  })

  it("a write while another connection holds the file's write lock for a few seconds is retried, not failed", async () => {
    const file = path.join(tempDir, "locked.db")
    await withStore(sqliteStateLayer(file), Effect.void) // created and migrated
    const other = new Database(file)
    other.exec("BEGIN EXCLUSIVE")
    const started = Date.now()
    // Released from the event loop: only a store that waits without blocking it (between retries) lets this run.
    const release = setTimeout(() => {
      other.exec("COMMIT")
      other.close()
    }, 3_000)
    try {
      const cursor = await withStore(sqliteStateLayer(file), setCursor("42"))
      expect(Option.getOrThrow(cursor).value).toBe("42")
      expect(Date.now() - started).toBeGreaterThanOrEqual(2_900)
    } finally {
      clearTimeout(release)
      if (other.open) other.close()
    }
  })

  it("a lock held past every retry is a retryable StateError naming the file", () => {
    const error = toStateError("/srv/.rivet_state.db", Object.assign(new Error("database is locked"), { code: "SQLITE_BUSY" }))
    expect(error.message).toContain("/srv/.rivet_state.db is locked by another process")
    expect(error.retryable).toBe(true)
  })

  it("a file that is not a database is reported as such", async () => {
    const file = path.join(tempDir, "garbage.db")
    fs.writeFileSync(file, "this is not sqlite, just some text that is long enough to look like a header......")
    const error = await failureOf(sqliteStateLayer(file), StateStore)
    expect(error.message).toContain("not a readable Rivet state database")
  })
})

const backend = postgresBackend(testPgUrl())
afterAll(() => backend.teardown())

describe("PostgreSQL backend", () => {
  it("a state connection the server terminates is reconnected and the write retried", async () => {
    const target = await backend.fresh()
    const admin = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
    try {
      const cursor = await withStore(
        target.layer(),
        Effect.gen(function* () {
          yield* setCursor("1")
          yield* Effect.promise(() =>
            admin.unsafe("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'rivet-state' AND pid <> pg_backend_pid()")
          )
          return yield* setCursor("2")
        })
      )
      expect(Option.getOrThrow(cursor).value).toBe("2")
    } finally {
      await admin.end({ timeout: 5 })
    }
  })


  it("concurrent first connects migrate once (advisory lock) and both write", async () => {
    const target = await backend.fresh()
    const both = await Promise.all([withStore(target.layer(), setCursor("1")), withStore(target.layer(), setCursor("2"))])
    expect(both.map((cursor) => Option.isSome(cursor))).toEqual([true, true])
    // Each step applied once, not once per connect.
    expect(await target.query("SELECT version FROM rivet_schema_version")).toHaveLength(LATEST_SCHEMA_VERSION)
  })

  it("masks the password in its location and in connection errors", async () => {
    const withPassword = new URL(testPgUrl())
    withPassword.password = "s3cret-pw"
    const location = await withStore(postgresStateLayer(withPassword.toString()), Effect.map(StateStore, (s) => s.location))
    expect(location).toContain(":***@")
    expect(location).not.toContain("s3cret-pw")

    withPassword.port = "1"
    // A refused connection is transient: one quick retry is enough to see the message it ends with.
    const error = await failureOf(postgresStateLayer(withPassword.toString(), { maxRetries: 1, initialDelay: "10 millis", maxDelay: "10 millis" }), StateStore)
    expect(error.message).toContain(":***@127.0.0.1:1")
    expect(`${error.message} ${error.hint}`).not.toContain("s3cret-pw")
    expect(error.hint).toContain("RIVET_STATE_URL")
  })
})

describe("stateLayerFor", () => {
  const configDir = tempDir

  it("uses the SQLite file beside the config unless RIVET_STATE_URL is set (empty counts as unset)", async () => {
    const expected = { _tag: "sqlite", path: path.join(configDir, STATE_FILE_NAME) }
    expect(await Effect.runPromise(stateLocationFor({ configDir, env: {} }))).toEqual(expected)
    expect(await Effect.runPromise(stateLocationFor({ configDir, env: { RIVET_STATE_URL: " " } }))).toEqual(expected)
    expect(await Effect.runPromise(stateLocationFor({ configDir, env: {}, path: ":memory:" }))).toEqual({ _tag: "sqlite", path: ":memory:" })
    const location = await withStore(stateLayerFor({ configDir, env: {} }), Effect.map(StateStore, (s) => s.location))
    expect(location).toBe(expected.path)
  })

  it("uses PostgreSQL when RIVET_STATE_URL is set", async () => {
    const location = await Effect.runPromise(stateLocationFor({ configDir, env: { RIVET_STATE_URL: testPgUrl() } }))
    expect(location).toEqual({ _tag: "postgres", url: testPgUrl() })
    const target = await backend.fresh()
    const cursor = await withStore(stateLayerFor({ configDir, env: { RIVET_STATE_URL: target.url } }), setCursor("5"))
    expect(Option.getOrThrow(cursor).value).toBe("5")
    expect(await target.query("SELECT value FROM rivet_cursors")).toEqual([{ value: "5" }])
  })

  it("refuses a RIVET_STATE_URL that is not a PostgreSQL URL, naming the variable", async () => {
    const error = await failureOf(stateLayerFor({ configDir, env: { RIVET_STATE_URL: "mysql://root:pw@db/x" } }), StateStore)
    expect(error.message).toContain("RIVET_STATE_URL")
    expect(error.message).not.toContain("pw@")
  })
})
