import type { ChildProcess } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import mysql from "mysql2/promise"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Manifest } from "../../src/core/manifest.js"
import { stateLayerFor } from "../../src/state/layer.js"
import { type RunRecord, StateStore } from "../../src/state/store.js"
import { testMysqlBinlogUrl } from "../support/mysql.js"
import { random, sleep, type Started, startRun } from "./cdc-fault-support.js"
import { duckRows } from "./partition-support.js"

// mode: cdc on MariaDB's binary log under faults, through the built CLI (`npm run build` first): SIGKILLs at random
// moments of first runs and of 20 change runs while small transactions commit all along, and the binary log
// connection killed (KILL) mid-run. After each, what the state records as successful runs — their kept manifests and
// the changes in the parts those list — holds every change exactly once: no (__pos, __seq) pair twice, as many
// changes after the snapshot as were written after it, and the changes folded by id equal to the table.
// RIVET_CDC_FAULTS_SEED replays the random schedule (it is printed).

const url = testMysqlBinlogUrl()
if (url === "") process.stderr.write(`SKIPPED ${path.basename(import.meta.filename)}: no MariaDB with a binary log\n`)
const SEED = Number(process.env["RIVET_CDC_FAULTS_SEED"] ?? Math.floor(Math.random() * 2 ** 31))

let db: mysql.Connection
const dirs: Array<string> = []
const tables: Array<string> = []
const children = new Set<ChildProcess>()

beforeAll(async () => {
  if (url === "") return
  db = await mysql.createConnection({ uri: url, multipleStatements: true })
})

afterAll(async () => {
  if (url === "") return
  for (const child of children) child.kill("SIGKILL")
  if (tables.length > 0) await db.query(`DROP TABLE IF EXISTS ${tables.join(", ")}`)
  await db.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

interface CdcExport {
  readonly name: string
  readonly dir: string
  readonly config: string
  readonly out: string
  /** Changes written after the first successful run's snapshot. */
  written: number
}

let serverId = 4300

const cdcExport = async (name: string, rows: number, options: { readonly url?: string; readonly rollover?: number } = {}): Promise<CdcExport> => {
  tables.push(name)
  await db.query(`DROP TABLE IF EXISTS ${name}; CREATE TABLE ${name} (id bigint PRIMARY KEY, v int NOT NULL, note varchar(200) NOT NULL)`)
  if (rows > 0) await db.query(`INSERT INTO ${name} SELECT seq, seq % 1000, CONCAT('note ', seq) FROM seq_1_to_${rows}`)
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cdc-mysql-faults-"))
  dirs.push(dir)
  const config = path.join(dir, "rivet.yaml")
  const document = {
    source: { type: "mysql", url: options.url ?? url },
    exports: [{ name, table: name, mode: "cdc", cdc: { server_id: serverId++, rollover: options.rollover ?? 100 }, format: "parquet", destination: { type: "local", path: "out" } }]
  }
  fs.writeFileSync(config, JSON.stringify(document, null, 2))
  return { name, dir, config, out: path.join(dir, "out"), written: 0 }
}

const startCli = (ex: CdcExport): Started => startRun(ex.config, ex.dir, children)

const runToEnd = async (ex: CdcExport) => {
  const started = startCli(ex)
  const exit = await started.exited
  expect(exit.code, started.stderr()).toBe(0)
  return started.stderr()
}

/** Kept manifests: a manifest being written (or left half-written by a killed run) is a dot-file beside them. */
const keptManifests = (ex: CdcExport) => {
  const dir = path.join(ex.out, "_manifests")
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((name) => !name.startsWith(".")).length : 0
}

const readState = (ex: CdcExport) =>
  Effect.runPromise(
    Effect.gen(function* () {
      const store = yield* StateStore
      const cursor = Option.getOrUndefined(yield* store.cursor(ex.name))
      const runs = yield* store.runs(ex.name, 10_000)
      return { position: cursor?.value, runs: [...runs].reverse() as ReadonlyArray<RunRecord> }
    }).pipe(Effect.provide(stateLayerFor({ configDir: ex.dir, env: process.env })))
  )

/** Small transactions on a connection of their own, every 10 to 40 ms until stopped: inserts, an update or a delete. */
const writeMeanwhile = async (ex: CdcExport, draw: () => number, nextId: { value: number }) => {
  const writer = await mysql.createConnection({ uri: url })
  let stopped = false
  const loop = (async () => {
    while (!stopped) {
      const first = nextId.value
      const inserted = 1 + Math.floor(draw() * 3)
      nextId.value += inserted
      const other = 1 + Math.floor(draw() * (first - 1))
      await writer.beginTransaction()
      const values = Array.from({ length: inserted }, (_, i) => `(${first + i}, 7, 'meanwhile ${first + i}')`).join(", ")
      const [insert] = (await writer.query(`INSERT INTO ${ex.name} VALUES ${values}`)) as unknown as [{ affectedRows: number }]
      const statement = draw() < 0.7 ? `UPDATE ${ex.name} SET v = v + 100, note = CONCAT(note, '!') WHERE id = ?` : `DELETE FROM ${ex.name} WHERE id = ?`
      const [changed] = (await writer.query(statement, [other])) as unknown as [{ affectedRows: number }]
      await writer.commit()
      ex.written += insert.affectedRows + changed.affectedRows
      await sleep(10 + draw() * 30)
    }
  })()
  return async () => {
    stopped = true
    await loop.finally(() => writer.end())
  }
}

/**
 * The exactly-once check over the runs the state records as successful: their kept manifests' parts, no (__pos,
 * __seq) pair twice, one snapshot, as many changes after it as were written, and folded by id the table's rows.
 */
const verifyExactlyOnce = async (ex: CdcExport) => {
  const state = await readState(ex)
  const successes = state.runs.filter((run) => run.status === "success")
  const files = successes.flatMap((run) => {
    const manifest = JSON.parse(fs.readFileSync(path.join(ex.out, "_manifests", `${run.runId}.json`), "utf8")) as Manifest
    return manifest.parts.map((part) => path.join(ex.out, part.path))
  })
  expect(new Set(files).size, "a part listed by two successful runs").toBe(files.length)
  const list = `[${files.map((file) => `'${file}'`).join(", ")}]`
  const changes = `(SELECT __op AS op, __pos AS pos, __seq AS seq, id, v, note, list_position(${list}, filename) AS file, file_row_number AS n
    FROM read_parquet(${list}, filename = true, file_row_number = true))`
  const repeated = await duckRows(`SELECT pos, seq::varchar AS seq, count(*)::int AS times FROM ${changes} GROUP BY pos, seq HAVING count(*) > 1 LIMIT 5`)
  expect(repeated, "(__pos, __seq) pairs listed more than once").toEqual([])
  const [counts] = await duckRows(
    `SELECT count(*)::int AS total, (count(*) FILTER (WHERE op = 'snapshot'))::int AS snapshot, count(DISTINCT pos) FILTER (WHERE op = 'snapshot') AS snapshots FROM ${changes}`
  )
  expect(Number(counts!["snapshots"]), "one snapshot").toBe(1)
  expect(Number(counts!["total"]) - Number(counts!["snapshot"]), "changes written after the snapshot").toBe(ex.written)
  const folded = await duckRows(
    `SELECT id::varchar || ' ' || v::varchar || ' ' || note AS line FROM ${changes} QUALIFY row_number() OVER (PARTITION BY id ORDER BY file DESC, n DESC) = 1 AND op <> 'delete' ORDER BY id`
  )
  const [table] = (await db.query(`SELECT CONCAT(id, ' ', v, ' ', note) AS line FROM ${ex.name} ORDER BY id`)) as unknown as [Array<{ line: string }>]
  expect(folded.map((row) => row["line"])).toEqual(table.map((row) => row.line))
  return { runs: successes.length, parts: files.length, changes: Number(counts!["total"]) }
}

describe.skipIf(url === "")("mode: cdc on MariaDB under faults (CLI)", () => {
  it("SIGKILL at random moments of first runs and of 20 change runs: every change exactly once", async () => {
    const draw = random(SEED)
    const ex = await cdcExport("cmf_kill", 2000)
    const nextId = { value: 2001 }
    const tally = { killed: 0, notKilled: 0, publishedUnrecorded: 0 }

    const killedRun = async (delayMs: number) => {
      const keptBefore = keptManifests(ex)
      const successesBefore = (await readState(ex)).runs.filter((run) => run.status === "success").length
      const started = startCli(ex)
      const timer = setTimeout(() => started.child.kill("SIGKILL"), delayMs)
      const exit = await started.exited
      clearTimeout(timer)
      if (exit.signal !== "SIGKILL") {
        expect(exit.code, started.stderr()).toBe(0)
        tally.notKilled++
        return false
      }
      tally.killed++
      const kept = keptManifests(ex)
      const successes = (await readState(ex)).runs.filter((run) => run.status === "success").length
      if (kept > keptBefore && successes === successesBefore) tally.publishedUnrecorded++
      return true
    }

    // First runs killed at random within the ~2 s a first run takes here (nothing recorded yet: the next run starts
    // with a new snapshot), then one to the end.
    for (let i = 0; i < 3 && (await readState(ex)).position === undefined; i++) await killedRun(200 + Math.floor(draw() * 1800))
    if ((await readState(ex)).position === undefined) await runToEnd(ex)
    const stopWriting = await writeMeanwhile(ex, random(SEED + 2), nextId)
    const TRIALS = 20
    try {
      const at = Date.now()
      await runToEnd(ex)
      const changeMs = Date.now() - at
      console.log(`mysql cdc kill trials: seed ${SEED}, a change run takes ${changeMs} ms`)
      // Every other killed run is followed by one to the end; the others by the next trial's, also killed.
      for (let trial = 0; trial < TRIALS; trial++) {
        await sleep(draw() * 200)
        if ((await killedRun(Math.floor(draw() * changeMs))) && trial % 2 === 1) await runToEnd(ex)
      }
    } finally {
      await stopWriting()
    }
    await runToEnd(ex)
    const verified = await verifyExactlyOnce(ex)
    console.log(`mysql cdc kill trials: ${JSON.stringify({ seed: SEED, trials: TRIALS, ...tally, ...verified })}`)
    expect(tally.killed, `seed ${SEED}`).toBeGreaterThanOrEqual(TRIALS / 2)
  }, 300_000)

  // 100 000 changes of ~200 bytes: more than the socket's buffers hold, so the kill lands while the log is read.
  it("the binary log connection killed (KILL) while a run reads 100 000 changes: the run is retried and succeeds, every change once", async () => {
    // A user of its own, so the test kills this run's binary log connection and no other test file's.
    await db.query(`DROP USER IF EXISTS 'rivet_cdc_kill'@'%'; CREATE USER 'rivet_cdc_kill'@'%';
      GRANT SELECT, REPLICATION SLAVE, BINLOG MONITOR ON *.* TO 'rivet_cdc_kill'@'%'`)
    const own = new URL(url)
    own.username = "rivet_cdc_kill"
    const ex = await cdcExport("cmf_killconn", 10, { url: own.toString(), rollover: 50_000 })
    await runToEnd(ex)
    for (let t = 0; t < 10; t++) {
      await db.query(`INSERT INTO ${ex.name} SELECT seq, seq % 1000, CONCAT(REPEAT('x', 180), seq) FROM seq_${11 + t * 10_000}_to_${10 + (t + 1) * 10_000}`)
    }
    ex.written += 100_000
    // The server keeps a reader's dump thread until it next writes to it: the first run's may still be listed.
    const dumpThreads = async () =>
      ((await db.query("SELECT ID FROM information_schema.PROCESSLIST WHERE COMMAND LIKE 'Binlog Dump%' AND USER = 'rivet_cdc_kill'")) as unknown as [
        Array<{ ID: number }>
      ])[0].map((row) => row.ID)
    const earlier = new Set(await dumpThreads())
    const started = startCli(ex)
    let killed = false
    for (const deadline = Date.now() + 30_000; Date.now() < deadline && !killed; ) {
      for (const id of await dumpThreads()) {
        if (earlier.has(id)) continue
        await db.query(`KILL ${id}`)
        killed = true
      }
      await sleep(10)
    }
    expect(killed, "a binlog dump thread to kill").toBe(true)
    const exit = await started.exited
    expect(exit.code, started.stderr()).toBe(0)
    expect(started.stderr()).toMatch(/the change log: attempt 1 of \d+ failed, retrying: /)
    expect((await verifyExactlyOnce(ex)).changes).toBe(10 + 100_000)
    await db.query("DROP USER IF EXISTS 'rivet_cdc_kill'@'%'")
  }, 120_000)
})
