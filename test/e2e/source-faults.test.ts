import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import Database from "better-sqlite3"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { loadConfig } from "../../src/api.js"
import { exitCodeOf } from "../../src/core/errors.js"
import type { ExportProgress, ProgressReporterShape } from "../../src/core/progress.js"
import { ProgressReporter } from "../../src/core/progress.js"
import { runConfig, type RunConfigOptions } from "../../src/engine/run.js"
import { formatBytes } from "../../src/core/size.js"
import { stateLayerFor } from "../../src/state/layer.js"
import { runCli, writeConfig } from "../support/cli.js"
import { filesUnder, readManifest } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"
import { startKiller, UNIT_STATEMENT, watchExecutions } from "./backend-killer.js"
import { snapshot, verifyDestination } from "./crash-support.js"
import { untyped } from "../support/config.js"

// Source faults: a watcher connection terminates the export's backend (pg_terminate_backend) while it streams.
// Chunks and pages are read again (same names, so parts an attempt committed are overwritten) and every row ends up
// in the manifest exactly once; single-statement modes fail cleanly; a statement timeout is not retried.

const ROWS = 160_000
const SUBSET = 40_000
const NEVER_FAULTED = "no backend was terminated: a fault test that never faulted proves nothing"

let sql: postgres.Sql
const dirs: Array<string> = []
const ids = (count: number) => Array.from({ length: count }, (_, i) => i + 1)

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  // ~300-byte CSV rows (the label is 256 hex digits, as crash-support's reader expects): a chunk or page of 20 000
  // rows spans several 1 MiB blocks and 1 MiB parts, so a terminated attempt has always written and committed some.
  await sql.unsafe(`
    DROP TABLE IF EXISTS h1_src, h1_inc;
    CREATE TABLE h1_src (id bigint PRIMARY KEY, label text NOT NULL, amount numeric(12,2) NOT NULL, note text);
    INSERT INTO h1_src
      SELECT i, repeat(md5(i::text), 8), (i % 100000) / 100.0,
             CASE WHEN i % 5 = 0 THEN NULL ELSE repeat(chr(97 + i % 26), 10 + i % 20) END
      FROM generate_series(1, ${ROWS}) AS i;
    CREATE TABLE h1_inc (LIKE h1_src INCLUDING ALL);
  `)
}, 120_000)

afterAll(async () => {
  await sql.unsafe("DROP TABLE IF EXISTS h1_src, h1_inc")
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** A config whose source connects as `app` (so the watcher finds its backends) and writes to `<dir>/out`. */
const configFor = (app: string, exportKeys: string, sourceKeys = "") => {
  const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}", application_name: ${app}${sourceKeys} }
exports:
  - { ${exportKeys}, destination: { type: local, path: out } }
`)
  dirs.push(path.dirname(file))
  return { file, dir: path.dirname(file), out: path.join(path.dirname(file), "out") }
}

const partsCommitted = (out: string, count: number) => () => snapshot(out).finals.length >= count
const writingPart = (out: string) => () => snapshot(out).temps.some((temp) => temp.size > 0)
const retryNotices = (stderr: string) => stderr.match(/attempt \d+ of \d+ failed, retrying/g)?.length ?? 0
const bytesListed = (out: string) => readManifest(out).parts.reduce((sum, part) => sum + part.size_bytes, 0)

const jsonEvents = (stderr: string): Array<Record<string, unknown>> =>
  stderr
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)

const expectNothingPublished = (out: string) => {
  const files = filesUnder(out)
  expect(files.filter((file) => file === "manifest.json" || file === "_SUCCESS" || file.includes(".tmp-"))).toEqual([])
}

describe("a backend terminated mid-stream (CLI)", () => {
  it("chunked, parallel 2 (worker lanes): both running chunks are retried, every row lands exactly once", async () => {
    const { file, out } = configFor(
      "h1_chunked",
      // Read with COPY, a 20000-row chunk is sent in a few milliseconds; 1 ms every 50 rows keeps two chunks
      // streaming at once long enough for both to be terminated mid-stream.
      "name: h1_chunked, query: \"SELECT h.* FROM h1_src h, LATERAL (SELECT pg_sleep(CASE WHEN h.id % 50 = 0 THEN 0.001 ELSE 0 END)) AS slow\", " +
        "chunk_column: id, mode: chunked, chunk_size: 20000, parallel: 2, format: csv, max_file_size: 1MiB"
    )
    // Two chunks statements running at once, one in a worker thread (RIVET_LANES=1 asks for it whatever the cores).
    // CSV chunks stream from COPY (a COPY has no pause between fetches): terminate them while they stream.
    const killer = startKiller(testPgUrl(), {
      app: "h1_chunked",
      statement: UNIT_STATEMENT,
      phase: "streaming",
      when: partsCommitted(out, 2),
      together: 2
    })
    const result = await runCli(["run", "-c", file, "--json"], { env: { RIVET_LANES: "1" } })
    const killed = (await killer.stop()).flat()
    expect(killed.length, `${NEVER_FAULTED}\n${result.stderr}`).toBeGreaterThanOrEqual(2)
    expect(result.code, result.stderr).toBe(0)

    const finished = jsonEvents(result.stderr).find((event) => event["event"] === "export_finished")!
    expect(finished["retries"]).toBeGreaterThanOrEqual(1)
    expect(finished["retries"]).toBeLessThanOrEqual(killed.length)
    expect(retryNotices(result.stderr)).toBe(finished["retries"])
    const verified = await verifyDestination(out, result.stderr, ids(ROWS))
    expect(verified.problems).toEqual([])
    expect({ missing: verified.missing, duplicated: verified.duplicated }).toEqual({ missing: [], duplicated: [] })
    expect(verified.rowCount).toBe(ROWS)
    // A retried chunk kept its part names: what its failed attempt committed was overwritten, nothing is left over.
    expect(verified.unlisted).toEqual([])
    // The failed attempts' bytes (workers report them as they go) were taken back.
    expect(finished["bytes"]).toBe(bytesListed(out))
  }, 90_000)

  it("keyset: a page cut short is read again from the same key; a page already read is kept; the summary counts 1 retry", async () => {
    // batch_size = page_size: each page is one COPY (smaller batches read it in pieces, the next test), one batch
    // and so one part.
    const { file, out } = configFor(
      "h1_keyset",
      "name: h1_keyset, table: h1_src, mode: keyset, page_size: 20000, batch_size: 20000, format: csv, max_file_size: 1MiB"
    )
    // A COPY whose connection closes mid-stream must not pass for a complete page, or the page would be committed
    // short (and, short, end the export). After the last row the page is complete: its lost transaction must not
    // cost a retry (nor a crash ending it).
    const cut = startKiller(testPgUrl(), { app: "h1_keyset", statement: UNIT_STATEMENT, when: partsCommitted(out, 1) })
    const done = startKiller(testPgUrl(), {
      app: "h1_keyset",
      statement: UNIT_STATEMENT,
      phase: "after the last fetch",
      when: partsCommitted(out, 4)
    })
    // Encoded on the reading thread: with the encoder thread, the page's last part is written later, and a kill in
    // "idle in transaction" can land while the end of the COPY still waits unread in the paused socket — a safe
    // retry of the page, but not the moment this test is about.
    const result = await runCli(["run", "-c", file, "--no-encoder-thread"])
    const killed = { cut: (await cut.stop()).flat(), done: (await done.stop()).flat() }
    expect({ cut: killed.cut.length, done: killed.done.length }, `${NEVER_FAULTED}\n${result.stderr}`).toEqual({
      cut: 1,
      done: 1
    })
    expect(result.code, result.stderr).toBe(0)

    expect(/^\s*retries:\s+(\d+)$/m.exec(result.stderr)?.[1], result.stderr).toBe("1")
    expect(retryNotices(result.stderr)).toBe(1)
    expect(result.stderr).toMatch(
      /page \d+: attempt 1 of 6 failed, retrying: .*the connection to PostgreSQL at \S+ was closed while reading rows/
    )
    const verified = await verifyDestination(out, result.stderr, ids(ROWS))
    expect(verified.problems).toEqual([])
    expect({ missing: verified.missing, duplicated: verified.duplicated }).toEqual({ missing: [], duplicated: [] })
    expect(verified.rowCount).toBe(ROWS)
    expect(verified.unlisted).toEqual([])
    expect(/^\s*bytes:\s+(.+)$/m.exec(result.stderr)?.[1]).toBe(formatBytes(bytesListed(out)))
  }, 90_000)

  it("keyset in pieces: a page cut short in a later piece is read again from the page's first key, every row once", async () => {
    const { file, out } = configFor(
      "h1_keyset_pieces",
      "name: h1_keyset_pieces, table: h1_src, mode: keyset, page_size: 20000, batch_size: 1000, format: csv, max_file_size: 1MiB"
    )
    // Pieces after a page's first carry a second key condition: the page's start and the last key read.
    const cut = startKiller(testPgUrl(), {
      app: "h1_keyset_pieces",
      statement: `${UNIT_STATEMENT} AND "id" > %`,
      when: partsCommitted(out, 8)
    })
    const result = await runCli(["run", "-c", file])
    const killed = (await cut.stop()).flat()
    expect(killed.length, `${NEVER_FAULTED}\n${result.stderr}`).toBe(1)
    expect(result.code, result.stderr).toBe(0)
    expect(/^\s*retries:\s+(\d+)$/m.exec(result.stderr)?.[1], result.stderr).toBe("1")
    expect(result.stderr).toMatch(/page [1-7]: attempt 1 of 6 failed, retrying: .*was closed while reading rows/)
    const verified = await verifyDestination(out, result.stderr, ids(ROWS))
    expect(verified.problems).toEqual([])
    expect({ missing: verified.missing, duplicated: verified.duplicated }).toEqual({ missing: [], duplicated: [] })
    expect(verified.rowCount).toBe(ROWS)
    expect(verified.unlisted).toEqual([])
  }, 90_000)

  it("full: fails with exit 2 naming the export and the terminated connection; nothing is published", async () => {
    const { file, out } = configFor("h1_full", "name: h1_full, table: h1_src, format: csv")
    const killer = startKiller(testPgUrl(), { app: "h1_full", statement: "%SELECT * FROM %h1_src%", when: writingPart(out) })
    const result = await runCli(["run", "-c", file])
    const killed = (await killer.stop()).flat()
    expect(killed.length, `${NEVER_FAULTED}\n${result.stderr}`).toBe(1)
    expect(result.code, result.stderr).toBe(2)
    expect(result.stderr).toMatch(/^Error: export "h1_full": the connection to PostgreSQL at \S+ was closed while reading rows/m)
    expect(result.stderr).toMatch(/^Hint: the server ended the session \(a restart, a failover, pg_terminate_backend\)/m)
    expect(retryNotices(result.stderr)).toBe(0)
    expect(filesUnder(out)).toEqual([])
  }, 60_000)

  it("incremental: a terminated run fails with exit 2 and leaves the cursor and the last publication as they were", async () => {
    await sql.unsafe("TRUNCATE h1_inc; INSERT INTO h1_inc SELECT * FROM h1_src WHERE id <= 1000")
    const { file, dir, out } = configFor(
      "h1_inc",
      "name: h1_inc, table: h1_inc, mode: incremental, cursor_column: id, format: csv"
    )
    const first = await runCli(["run", "-c", file])
    expect(first.code, first.stderr).toBe(0)
    const published = Object.fromEntries(filesUnder(out).map((name) => [name, fs.readFileSync(path.join(out, name))]))
    const cursor = () => {
      const db = new Database(path.join(dir, ".rivet_state.db"), { readonly: true })
      try {
        return db.prepare("SELECT value FROM rivet_cursors WHERE export_name = 'h1_inc'").pluck().get()
      } finally {
        db.close()
      }
    }
    expect(cursor()).toBe("1000")

    await sql.unsafe("INSERT INTO h1_inc SELECT * FROM h1_src WHERE id > 1000")
    const killer = startKiller(testPgUrl(), { app: "h1_inc", statement: UNIT_STATEMENT, when: writingPart(out) })
    const second = await runCli(["run", "-c", file])
    const killed = (await killer.stop()).flat()
    expect(killed.length, `${NEVER_FAULTED}\n${second.stderr}`).toBe(1)
    expect(second.code, second.stderr).toBe(2)
    expect(second.stderr).toMatch(/export "h1_inc": the connection to PostgreSQL at \S+ was closed while reading rows/)
    expect(cursor()).toBe("1000")
    expect(Object.fromEntries(filesUnder(out).map((name) => [name, fs.readFileSync(path.join(out, name))]))).toEqual(
      published
    )
  }, 60_000)

  it("statement_timeout is permanent: exit 1 after exactly one attempt, with the hint", async () => {
    // The sleep runs only in the chunk's statement (the one with rivet's BETWEEN filter, its bounds inlined as E'…'), not while planning reads
    // the key range; the pattern is split so that the query's own text does not match it.
    const query =
      "SELECT h.id, h.label FROM h1_src h, (SELECT pg_sleep(CASE WHEN current_query() LIKE '%BETW' || 'EEN %' THEN 3 ELSE 0 END)) AS s WHERE h.id <= 100"
    const { file, out } = configFor(
      "h1_timeout",
      `name: h1_timeout, query: "${query}", mode: chunked, chunk_column: id, chunk_size: 1000, format: csv`,
      ", statement_timeout_s: 1"
    )
    const watcher = watchExecutions(testPgUrl(), "h1_timeout", UNIT_STATEMENT)
    const started = Date.now()
    const result = await runCli(["run", "-c", file])
    const attempts = await watcher.stop()
    expect(result.code, result.stderr).toBe(1)
    expect(attempts, result.stderr).toBe(1)
    expect(Date.now() - started).toBeLessThan(30_000)
    expect(result.stderr).toMatch(/chunk 0 \(id 1\.\.100\): .*57014.*statement timeout/)
    expect(result.stderr).toMatch(/^Hint: raise the source's `statement_timeout_s` \(0 = none\) or export in chunks/m)
    expect(retryNotices(result.stderr)).toBe(0)
    expectNothingPublished(out)
  }, 60_000)
})

/** Runs a config in this process (chunks stay in this thread) and keeps the last progress it reported and notices. */
const runInProcess = (config: Record<string, unknown>, configDir: string, options: Pick<RunConfigOptions, "retry"> = {}) =>
  Effect.gen(function* () {
    let progress: ExportProgress | undefined
    const notices: Array<string> = []
    const reporter: ProgressReporterShape = {
      started: () => Effect.void,
      tick: (live) => Effect.sync(() => void (progress = live)),
      finished: () => Effect.void,
      notice: (_name, message) => Effect.sync(() => void notices.push(message)),
      intervalMs: 60_000
    }
    const loaded = yield* loadConfig(untyped(config), { configDir })
    const runs = yield* runConfig(loaded, { env: process.env, state: stateLayerFor({ configDir, env: process.env }), ...options }).pipe(
      Effect.provide(Layer.succeed(ProgressReporter, reporter))
    )
    return { run: runs[0]!, progress: progress!, notices }
  }).pipe(Effect.runPromise)

const inProcessConfig = (app: string, exportKeys: Record<string, unknown>) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-h1-"))
  dirs.push(dir)
  const out = path.join(dir, "out")
  const config = {
    source: { type: "postgres", url: testPgUrl(), application_name: app },
    exports: [{ query: `SELECT * FROM h1_src WHERE id <= ${SUBSET}`, format: "csv", destination: { type: "local", path: "out" }, ...exportKeys }]
  }
  return { config, dir, out }
}

describe("a backend terminated mid-stream (in process)", () => {
  it("a retried chunk counts once in the quality gates and the progress (no false duplicates)", async () => {
    const { config, dir, out } = inProcessConfig("h1_gates", {
      name: "h1_gates",
      // Read with COPY, a 5000-row chunk is sent in a few milliseconds; 1 ms every 10 rows keeps each chunk streaming
      // for a while, so that the terminations hit chunks mid-stream.
      query: `SELECT h.* FROM h1_src h, LATERAL (SELECT pg_sleep(CASE WHEN h.id % 10 = 0 THEN 0.001 ELSE 0 END)) AS slow WHERE h.id <= ${SUBSET}`,
      mode: "chunked",
      chunk_column: "id",
      chunk_size: 5000,
      batch_size: 500,
      parallel: 2,
      max_file_size: "256KiB",
      quality: { unique_columns: ["id"], null_ratio_max: { note: 0.2 }, row_count_min: SUBSET, row_count_max: SUBSET }
    })
    const killer = startKiller(testPgUrl(), {
      app: "h1_gates",
      statement: UNIT_STATEMENT,
      phase: "streaming",
      when: partsCommitted(out, 2)
    })
    const { run, progress } = await runInProcess(config, dir)
    const killed = (await killer.stop()).flat()
    expect(killed.length, NEVER_FAULTED).toBeGreaterThanOrEqual(1)
    if (run._tag !== "success") throw new Error(`the run failed: ${run.error.message}`)
    // Both chunks running at that moment may have been terminated: each is retried once.
    expect(run.result.retries).toBe(killed.length)
    const manifest = readManifest(out)
    expect({ rows: progress.rows, parts: progress.parts, bytes: progress.bytes }).toEqual({
      rows: SUBSET,
      parts: manifest.parts.length,
      bytes: bytesListed(out)
    })
    const verified = await verifyDestination(out, "", ids(SUBSET))
    expect(verified.problems).toEqual([])
    expect({ missing: verified.missing, duplicated: verified.duplicated }).toEqual({ missing: [], duplicated: [] })
    expect(verified.unlisted).toEqual([])
  }, 60_000)

  it("retries are bounded: a chunk terminated on every attempt fails with a retryable error, nothing published, the unit not done", async () => {
    const { config, dir, out } = inProcessConfig("h1_exhaust", {
      name: "h1_exhaust",
      // As above: slowed rows keep every attempt's COPY streaming long enough to be terminated mid-stream.
      query: `SELECT h.* FROM h1_src h, LATERAL (SELECT pg_sleep(CASE WHEN h.id % 10 = 0 THEN 0.001 ELSE 0 END)) AS slow WHERE h.id <= ${SUBSET}`,
      mode: "chunked",
      chunk_column: "id",
      chunk_size: SUBSET,
      batch_size: 500,
      chunk_checkpoint: true
    })
    const killer = startKiller(testPgUrl(), {
      app: "h1_exhaust",
      statement: UNIT_STATEMENT,
      phase: "streaming",
      rounds: Infinity
    })
    const { run, notices } = await runInProcess(config, dir, {
      retry: { maxRetries: 2, initialDelay: "20 millis", maxDelay: "50 millis" }
    })
    const killed = (await killer.stop()).flat()
    if (run._tag !== "failure") throw new Error("the run succeeded although every attempt was terminated")
    expect(killed.length).toBe(3)
    expect(run.error._tag).toBe("SourceError")
    expect(exitCodeOf(run.error)).toBe(2)
    expect(run.error.message).toMatch(/^chunk 0 \(id 1\.\.40000\): export "h1_exhaust": the connection to PostgreSQL at \S+ was closed/)
    expect(notices.filter((notice) => /attempt \d of 3 failed, retrying/.test(notice))).toHaveLength(2)
    expect(filesUnder(out)).toEqual([])
    const db = new Database(path.join(dir, ".rivet_state.db"), { readonly: true })
    try {
      expect(db.prepare("SELECT status FROM rivet_runs WHERE export_name = 'h1_exhaust'").pluck().all()).toEqual(["failed"])
      expect(db.prepare("SELECT idx, status FROM rivet_units").all()).toEqual([{ idx: 0, status: "pending" }])
    } finally {
      db.close()
    }
  }, 60_000)
})
