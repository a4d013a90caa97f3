import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import Database from "better-sqlite3"
import type postgres from "postgres"
import type { Manifest } from "../../src/core/manifest.js"
import { writeConfig } from "../support/cli.js"
import { filesUnder, readManifest } from "../support/output.js"
import { type CsvShape, idsOf, snapshot, untrackedOf } from "./crash-support.js"

// Crash soak (issue #7, part 3): a checkpointed chunked export SIGKILLed at random moments, resumed until a run
// exits 0, then the destination and the state database are checked. Used by test/e2e/crash-soak.test.ts (a few
// trials in `npm test`) and bench/soak.sh (many trials, prints the tally).

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")
const TABLE = "h3_soak_src"
const EXPORT_NAME = "h3_soak"
const CHUNK_SIZE = 30_000
/** A trial that needs more attempts than its planned kills plus this is stuck, not unlucky. */
const SPARE_ATTEMPTS = 3

/** The share of a typical run the first kill of a trial is drawn in. */
const FIRST_KILL_SPAN = 0.7

export type SoakFormat = "parquet" | "csv"

/** The source as the checks need it: every id with its chunk key (`k`, NULL for a few rows). */
export interface SoakSource {
  readonly keys: ReadonlyMap<number, number | null>
}

const SOAK_CSV: CsvShape = {
  header: "id,k,label,amount,note",
  isCompleteRow: (fields) =>
    fields.length === 5 && /^\d+$/.test(fields[0]!) && /^\d*$/.test(fields[1]!) && /^[0-9a-f]{32}$/.test(fields[2]!)
}

/**
 * 59,400 rows. The chunk key `k` has gaps (ids ≡ 7 mod 10 and 30001..42000 are missing, so one 30,000-wide chunk is
 * empty) and is NULL for 66 rows (the NULL chunk); `id` is the primary key the checks count by.
 */
export const createSoakSource = async (sql: postgres.Sql): Promise<SoakSource> => {
  await sql.unsafe(`
    DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (id bigint PRIMARY KEY, k bigint, label text NOT NULL, amount numeric(12,2) NOT NULL, note text);
    INSERT INTO ${TABLE}
      SELECT i, CASE WHEN i % 1000 = 500 THEN NULL ELSE i * 3 - i % 3 END, md5(i::text), (i % 100000) / 100.0,
             CASE WHEN i % 5 = 0 THEN NULL ELSE repeat(chr(97 + i % 26), 10 + i % 20) END
      FROM generate_series(1, 78000) AS i WHERE i % 10 <> 7 AND i NOT BETWEEN 30001 AND 42000;
    CREATE INDEX ON ${TABLE} (k);
    ANALYZE ${TABLE};
  `)
  const rows = await sql<Array<{ id: string; k: string | null }>>`SELECT id, k FROM ${sql(TABLE)}`
  return { keys: new Map(rows.map((row) => [Number(row.id), row.k === null ? null : Number(row.k)])) }
}

export const dropSoakSource = (sql: postgres.Sql) => sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)

/** mulberry32: a small seeded generator, so a trial's schedule can be replayed from the printed seed. */
const rngOf = (seed: number) => {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = a
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const trialSeedOf = (seed: number, trial: number) => (Math.imul(seed ^ 0x9e3779b9, 31) + trial * 0x85ebca6b) >>> 0

interface Attempt {
  readonly code: number | null
  readonly killed: boolean
  readonly stderr: string
  readonly wallMs: number
}

/** Runs the CLI; SIGKILLs it `killAfterMs` after the spawn unless it has exited by then. */
const attempt = (args: ReadonlyArray<string>, killAfterMs: number | undefined) =>
  new Promise<Attempt>((resolve, reject) => {
    const started = performance.now()
    const child = spawn(process.execPath, [BIN, ...args], {
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
      stdio: ["ignore", "ignore", "pipe"]
    })
    let stderr = ""
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    const timer = killAfterMs === undefined ? undefined : setTimeout(() => child.kill("SIGKILL"), killAfterMs)
    child.on("error", reject)
    child.on("close", (code, signal) => {
      clearTimeout(timer)
      resolve({ code, killed: signal === "SIGKILL", stderr, wallMs: performance.now() - started })
    })
  })

/** A fresh directory with the soak's config; the destination is `out/` and the state `.rivet_state.db` beside it. */
export const soakConfig = (pgUrl: string, format: SoakFormat) => {
  const file = writeConfig(`source: { type: postgres, url: "${pgUrl}" }
exports:
  - name: ${EXPORT_NAME}
    table: ${TABLE}
    mode: chunked
    chunk_column: k
    chunk_size: ${CHUNK_SIZE}
    chunk_checkpoint: true
    parallel: 2
    format: ${format}
    destination: { type: local, path: out }
`)
  const dir = path.dirname(file)
  return { file, dir, out: path.join(dir, "out"), stateFile: path.join(dir, ".rivet_state.db") }
}

const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`

const withState = <A>(stateFile: string, use: (db: Database.Database) => A): A | undefined => {
  if (!fs.existsSync(stateFile)) return undefined
  const db = new Database(stateFile, { timeout: 10_000 })
  try {
    return use(db)
  } finally {
    db.close()
  }
}

const AFTER_FINISH = "after finish (no kill)"

/**
 * Where the kill landed, read from what it left: before the run was journaled, before its plan was saved, with
 * none / some / all chunks committed, after `_SUCCESS` but before the run was recorded, or after that.
 */
const killPhaseOf = (stateFile: string, out: string): string =>
  withState(stateFile, (db) => {
    // Killed between creating the file and migrating it: no tables yet.
    if (db.prepare("SELECT 1 FROM sqlite_master WHERE name = 'rivet_runs'").get() === undefined) return "before journal"
    const run = db
      .prepare("SELECT run_id, status FROM rivet_runs WHERE export_name = ? ORDER BY started_at DESC LIMIT 1")
      .get(EXPORT_NAME) as { run_id: string; status: string } | undefined
    if (run === undefined) return "before journal"
    if (run.status === "success") return AFTER_FINISH
    const units = db.prepare("SELECT status FROM rivet_units WHERE run_id = ?").pluck().all(run.run_id) as Array<string>
    if (units.length === 0) return "before plan"
    const done = units.filter((status) => status === "done").length
    if (done < units.length) return done === 0 ? "no chunk done" : "some chunks done"
    return fs.existsSync(path.join(out, "_SUCCESS")) ? "published, not recorded" : "all chunks done"
  }) ?? "before journal"

/** `_SUCCESS` may only ever name the manifest beside it, and that run's manifest is kept under `_manifests/`. */
const markerProblem = (out: string): string | undefined => {
  const success = path.join(out, "_SUCCESS")
  if (!fs.existsSync(success)) return undefined
  const manifest = path.join(out, "manifest.json")
  if (!fs.existsSync(manifest)) return "_SUCCESS without manifest.json"
  const bytes = fs.readFileSync(manifest)
  const expected = `${sha256(bytes)}\n`
  const actual = fs.readFileSync(success, "utf8")
  if (actual !== expected) return `_SUCCESS is ${JSON.stringify(actual)}, the manifest hashes to ${expected.trim()}`
  const kept = path.join(out, "_manifests", `${readManifest(out).run_id}.json`)
  if (!fs.existsSync(kept)) return `_SUCCESS of a run whose manifest is not kept (${path.relative(out, kept)} missing)`
  return fs.readFileSync(kept).equals(bytes) ? undefined : `${path.relative(out, kept)} differs from manifest.json`
}

/** The chunk plan the source implies: key ranges of CHUNK_SIZE from the smallest key, then the NULL chunk. */
const expectedUnits = (source: SoakSource) => {
  const keys = [...source.keys.values()]
  const present = keys.filter((key): key is number => key !== null)
  const min = Math.min(...present)
  const max = Math.max(...present)
  const units: Array<{ spec: string; rows: number }> = []
  for (let low = min; low <= max; low += CHUNK_SIZE) {
    const high = Math.min(low + CHUNK_SIZE - 1, max)
    units.push({
      spec: JSON.stringify({ low: String(low), high: String(high) }),
      rows: present.filter((key) => key >= low && key <= high).length
    })
  }
  const nulls = keys.length - present.length
  if (nulls > 0) units.push({ spec: JSON.stringify({ nulls: true }), rows: nulls })
  return units
}

export interface TrialCounts {
  rowsLost: number
  duplicateRows: number
  tempFilesLeft: number
  partialFinals: number
  stateMismatches: number
  untrackedFiles: number
  /** Files outside the manifest that the final summary's `untracked:` line does not name (or names wrongly). */
  untrackedMisreported: number
}

const zeroCounts = (): TrialCounts => ({
  rowsLost: 0,
  duplicateRows: 0,
  tempFilesLeft: 0,
  partialFinals: 0,
  stateMismatches: 0,
  untrackedFiles: 0,
  untrackedMisreported: 0
})

/** Everything the soak promises about a destination and its state after the run that exited 0. */
export const checkFinished = async (
  paths: { readonly out: string; readonly stateFile: string },
  finalStderr: string,
  source: SoakSource
): Promise<{ counts: TrialCounts; problems: Array<string> }> => {
  const { out, stateFile } = paths
  const counts = zeroCounts()
  const problems: Array<string> = []
  const note = (key: keyof TrialCounts, problem: string, by = 1) => {
    counts[key] += by
    problems.push(problem)
  }

  const temps = filesUnder(out).filter((file) => file.includes(".tmp-"))
  if (temps.length > 0) note("tempFilesLeft", `temp files left: ${temps.join(", ")}`, temps.length)
  const marker = markerProblem(out)
  if (marker !== undefined) note("partialFinals", marker)

  const manifest: Manifest = readManifest(out)
  const seen = new Map<number, number>()
  for (const part of manifest.parts) {
    const file = path.join(out, part.path)
    const bytes = fs.existsSync(file) ? fs.readFileSync(file) : undefined
    if (bytes === undefined) {
      note("partialFinals", `${part.path} is listed but missing`)
      continue
    }
    if (bytes.length !== part.size_bytes || sha256(bytes) !== part.content_fingerprint) {
      note("partialFinals", `${part.path}: ${bytes.length} bytes / sha256 differ from the manifest`)
      continue
    }
    const ids = await idsOf(file, SOAK_CSV).catch((error: Error) => {
      note("partialFinals", error.message)
      return undefined
    })
    if (ids === undefined) continue
    if (ids.length !== part.rows) note("partialFinals", `${part.path}: ${ids.length} rows, manifest ${part.rows}`)
    for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1)
  }
  const lost = [...source.keys.keys()].filter((id) => !seen.has(id))
  if (lost.length > 0) note("rowsLost", `${lost.length} source rows missing, ids ${lost.slice(0, 10).join(", ")}…`, lost.length)
  const extra = [...seen].flatMap(([id, count]) => (source.keys.has(id) ? count - 1 : count))
  const duplicates = extra.reduce((sum, count) => sum + count, 0)
  if (duplicates > 0) {
    const ids = [...seen].filter(([id, count]) => count > 1 || !source.keys.has(id)).map(([id]) => id)
    note("duplicateRows", `${duplicates} duplicate or foreign rows, ids ${ids.slice(0, 10).join(", ")}…`, duplicates)
  }

  const listed = new Set(manifest.parts.map((part) => part.path))
  const unlisted = snapshot(out).finals.filter((name) => !listed.has(name))
  counts.untrackedFiles = unlisted.length
  for (const name of unlisted) {
    // Complete and readable even though no manifest lists it: nothing partial under a final name.
    const ids = await idsOf(path.join(out, name), SOAK_CSV).catch((error: Error) => {
      note("partialFinals", error.message)
      return []
    })
    if (ids.some((id) => !source.keys.has(id))) note("partialFinals", `${name} holds ids the source does not have`)
  }
  // A run killed right after it finished may not have printed its summary: nothing to compare then.
  const summarized = /^\s*duration:/m.test(finalStderr)
  const reported = new Set(untrackedOf(finalStderr))
  const misreported = [...unlisted.filter((name) => !reported.has(name)), ...[...reported].filter((name) => !unlisted.includes(name))]
  if (summarized && misreported.length > 0) {
    note("untrackedMisreported", `untracked line differs from the files outside the manifest: ${misreported.join(", ")}`, misreported.length)
  }

  const state = (problem: string) => note("stateMismatches", problem)
  if (manifest.row_count !== source.keys.size) state(`manifest row_count ${manifest.row_count}, source ${source.keys.size}`)
  if (manifest.part_count !== manifest.parts.length) state("manifest part_count differs from parts[]")
  if (listed.size !== manifest.parts.length) state("a part is listed twice")
  const stateFound = withState(stateFile, (db) => {
    const runs = db
      .prepare("SELECT run_id, status, finished_at, row_count, part_count, byte_count FROM rivet_runs WHERE export_name = ?")
      .all(EXPORT_NAME) as Array<{
      run_id: string
      status: string
      finished_at: string | null
      row_count: number
      part_count: number
      byte_count: number
    }>
    // Every resume continues the one journaled run: a second run means a resume started over.
    if (runs.length !== 1) state(`${runs.length} runs journaled: ${runs.map((run) => `${run.run_id} ${run.status}`).join(", ")}`)
    const run = runs.find((candidate) => candidate.run_id === manifest.run_id)
    if (run === undefined) {
      state(`the manifest's run ${manifest.run_id} is not journaled`)
      return true
    }
    if (run.status !== "success" || run.finished_at === null) state(`run ${run.run_id} is ${run.status}, finished_at ${run.finished_at}`)
    const bytes = manifest.parts.reduce((sum, part) => sum + part.size_bytes, 0)
    if (run.row_count !== manifest.row_count || run.part_count !== manifest.part_count || run.byte_count !== bytes) {
      state(`run totals ${run.row_count} rows / ${run.part_count} parts / ${run.byte_count} B differ from the manifest`)
    }

    const units = db.prepare("SELECT idx, spec, status, row_count FROM rivet_units WHERE run_id = ? ORDER BY idx").all(run.run_id) as Array<{
      idx: number
      spec: string
      status: string
      row_count: number
    }>
    const expected = expectedUnits(source)
    const actual = units.map((unit) => ({ spec: unit.spec, rows: unit.row_count }))
    if (JSON.stringify(actual) !== JSON.stringify(expected)) {
      state(`units ${JSON.stringify(actual)} differ from the planned chunks ${JSON.stringify(expected)}`)
    }
    const notDone = units.filter((unit) => unit.status !== "done")
    if (notDone.length > 0) state(`units not done: ${notDone.map((unit) => unit.idx).join(", ")}`)

    const parts = db.prepare("SELECT unit, path, row_count, size_bytes, fingerprint FROM rivet_parts WHERE run_id = ?").all(run.run_id) as Array<{
      unit: number | null
      path: string
      row_count: number
      size_bytes: number
      fingerprint: string
    }>
    const recorded = parts.map((part) => `${part.path} ${part.row_count} ${part.size_bytes} ${part.fingerprint}`).sort()
    const inManifest = manifest.parts.map((part) => `${part.path} ${part.rows} ${part.size_bytes} ${part.content_fingerprint}`).sort()
    if (JSON.stringify(recorded) !== JSON.stringify(inManifest)) {
      state(`recorded parts differ from the manifest: state ${recorded.length}, manifest ${inManifest.length}`)
    }
    for (const unit of units) {
      const rows = parts.filter((part) => part.unit === unit.idx).reduce((sum, part) => sum + part.row_count, 0)
      if (rows !== unit.row_count) state(`unit ${unit.idx} records ${unit.row_count} rows, its parts ${rows}`)
    }
    return true
  })
  if (stateFound === undefined) state("no state database")
  if (!fs.existsSync(path.join(out, "_SUCCESS"))) note("partialFinals", "no _SUCCESS after a run that exited 0")
  return { counts, problems }
}

export interface SoakTally extends TrialCounts {
  readonly seed: number
  trials: number
  parquetTrials: number
  csvTrials: number
  killsPlanned: number
  killsDelivered: number
  /** Kills aimed at a run that exited 0 first ("no kill"); the trial ends there, later planned kills lapse. */
  killsMissed: number
  trialsKilled: number
  resumes: number
  /** Attempts that exited non-zero without being killed. */
  unexpectedExits: number
  killPhases: Record<string, number>
  calibrationMs: Record<SoakFormat, number>
  wallMs: number
  problems: Array<{ readonly trial: number; readonly trialSeed: number; readonly format: SoakFormat; readonly problem: string }>
}

export interface SoakOptions {
  readonly pgUrl: string
  readonly source: SoakSource
  readonly trials: number
  readonly seed: number
  readonly log?: ((line: string) => void) | undefined
}

/**
 * The faster of two uninterrupted runs per format: the "typical run time" kill delays are drawn below. One run alone
 * can be slow (cold caches, a busy moment of a shared machine), and delays drawn past the real run time all miss.
 */
const calibrate = async (pgUrl: string, format: SoakFormat): Promise<number> => {
  const times: Array<number> = []
  for (let run = 0; run < 2; run++) {
    const paths = soakConfig(pgUrl, format)
    try {
      const result = await attempt(["run", "-c", paths.file], undefined)
      if (result.code !== 0) throw new Error(`calibration run (${format}) exited ${result.code}\n${result.stderr}`)
      times.push(result.wallMs)
    } finally {
      fs.rmSync(paths.dir, { recursive: true, force: true })
    }
  }
  return Math.min(...times)
}

export const runSoak = async (options: SoakOptions): Promise<SoakTally> => {
  const { pgUrl, source, trials, seed } = options
  const log = options.log ?? (() => {})
  const started = performance.now()
  const calibrationMs = { parquet: await calibrate(pgUrl, "parquet"), csv: await calibrate(pgUrl, "csv") }
  log(`soak: seed ${seed}, ${trials} trial(s), typical run ${Math.round(calibrationMs.parquet)} ms (Parquet) / ${Math.round(calibrationMs.csv)} ms (CSV)`)
  const tally: SoakTally = {
    seed,
    trials: 0,
    parquetTrials: 0,
    csvTrials: 0,
    killsPlanned: 0,
    killsDelivered: 0,
    killsMissed: 0,
    trialsKilled: 0,
    resumes: 0,
    unexpectedExits: 0,
    killPhases: {},
    calibrationMs,
    wallMs: 0,
    problems: [],
    ...zeroCounts()
  }

  for (let trial = 0; trial < trials; trial++) {
    const trialSeed = trialSeedOf(seed, trial)
    const random = rngOf(trialSeed)
    const format: SoakFormat = trial % 2 === 0 ? "parquet" : "csv"
    // The first run is always aimed at, early enough to land even when the machine has sped up since the calibration
    // (other test files finishing); 0–3 of the resumes after it are too, anywhere in a typical run.
    const delays = Array.from({ length: 1 + Math.floor(random() * 4) }, (_, index) =>
      Math.floor(random() * calibrationMs[format] * (index === 0 ? FIRST_KILL_SPAN : 1))
    )
    const paths = soakConfig(pgUrl, format)
    const problems: Array<string> = []
    const phases: Array<string> = []
    let delivered = 0
    let final: { readonly stderr: string } | undefined
    for (let index = 0; index < delays.length + SPARE_ATTEMPTS && final === undefined; index++) {
      if (index > 0) tally.resumes++
      const args = ["run", "-c", paths.file, ...(index > 0 ? ["--resume"] : [])]
      const run = await attempt(args, delays[index])
      let phase: string | undefined
      try {
        phase = run.killed ? killPhaseOf(paths.stateFile, paths.out) : undefined
      } catch (error) {
        phase = "state unreadable"
        tally.stateMismatches++
        problems.push(`after a kill the state could not be read: ${String(error)}`)
      }
      if (phase !== undefined) {
        phases.push(`${delays[index]}ms:${phase}`)
        tally.killPhases[phase] = (tally.killPhases[phase] ?? 0) + 1
      }
      if (phase === AFTER_FINISH) {
        // The run had finished (its summary may not be printed yet): a later --resume would start a new one.
        tally.killsMissed++
        final = { stderr: run.stderr }
      } else if (run.killed) {
        delivered++
        const marker = markerProblem(paths.out)
        if (marker !== undefined) {
          tally.partialFinals++
          problems.push(`after kill ${delivered}: ${marker}`)
        }
      } else if (run.code === 0) {
        if (delays[index] !== undefined) tally.killsMissed++
        final = { stderr: run.stderr }
      } else {
        tally.unexpectedExits++
        problems.push(`attempt ${index + 1} (${args.slice(3).join(" ") || "plain"}) exited ${run.code}: ${run.stderr.trim()}`)
      }
    }
    tally.trials++
    if (format === "parquet") tally.parquetTrials++
    else tally.csvTrials++
    tally.killsPlanned += delays.length
    tally.killsDelivered += delivered
    if (delivered > 0) tally.trialsKilled++
    if (final === undefined) {
      problems.push(`no run exited 0 within ${delays.length + SPARE_ATTEMPTS} attempts`)
    } else {
      const checked = await checkFinished(paths, final.stderr, source).catch((error: Error) => ({
        counts: { ...zeroCounts(), stateMismatches: 1 },
        problems: [`the checks could not run: ${error.message}`]
      }))
      for (const key of Object.keys(checked.counts) as Array<keyof TrialCounts>) tally[key] += checked.counts[key]
      problems.push(...checked.problems)
    }
    for (const problem of problems) tally.problems.push({ trial, trialSeed, format, problem })
    log(
      `trial ${trial} (seed ${trialSeed}, ${format}): ${delivered}/${delays.length} kill(s) [${phases.join(", ")}]` +
        (problems.length > 0 ? `, ${problems.length} problem(s), kept ${paths.dir}` : ", ok")
    )
    if (problems.length === 0) fs.rmSync(paths.dir, { recursive: true, force: true })
  }
  tally.wallMs = Math.round(performance.now() - started)
  return tally
}
