import { spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import Database from "better-sqlite3"
import { readRows } from "../plugins/formats/parquet/read-back.js"
import { filesUnder, readManifest } from "../support/output.js"

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")
const TEMP_NAME = /\.tmp-\d+-[0-9a-f]{12}$/

/**
 * Where the CLI is killed: `early` once the run is journaled (before any part), `between` parts (≥ 2 committed, none
 * being written), `during` a part upload (a temp file with bytes, ≥ 1 part committed), `unrecorded` right after a
 * part's rename while its checkpoint cannot be written (the test holds the state database's write lock). Committed
 * means recorded in the state database: a part is renamed into place before its checkpoint is written.
 */
export type KillPoint = "early" | "between" | "during" | "unrecorded"

export interface DirSnapshot {
  /** Data files under their final names (not manifest.json / _SUCCESS / _manifests/, not dot-files). */
  readonly finals: ReadonlyArray<string>
  readonly temps: ReadonlyArray<{ readonly name: string; readonly size: number }>
}

export const snapshot = (dir: string): DirSnapshot => {
  let names: Array<string>
  try {
    names = fs.readdirSync(dir)
  } catch {
    return { finals: [], temps: [] }
  }
  const temps = names.filter((name) => TEMP_NAME.test(name)).flatMap((name) => {
    try {
      return [{ name, size: fs.statSync(path.join(dir, name)).size }]
    } catch {
      return [] // renamed or removed between readdir and stat
    }
  })
  const finals = names.filter(
    (name) => !name.startsWith(".") && name !== "manifest.json" && name !== "_SUCCESS" && name !== "_manifests"
  )
  return { finals: finals.sort(), temps }
}

export interface Killed {
  /** The destination as seen right after the kill. */
  readonly afterKill: DirSnapshot
  /** Parts under a final name that the state database recorded before the kill: a resumed run keeps them. */
  readonly committed: ReadonlyArray<string>
  /** `unrecorded`: the part that was renamed into place while its checkpoint was blocked. */
  readonly unrecordedPart?: string | undefined
  readonly stderr: string
}

/**
 * Takes the state database's write lock once every part under a final name is recorded, so the next part to appear
 * is certainly not: the CLI's SQLite connection waits for the lock (up to 5 s, its event loop blocked) at that
 * part's checkpoint, right after the rename.
 */
const lockWhenAllRecorded = (stateFile: string, out: string) => {
  if (!fs.existsSync(stateFile)) return undefined
  const db = new Database(stateFile, { timeout: 10_000 })
  try {
    db.exec("BEGIN IMMEDIATE")
    const recorded = new Set(db.prepare("SELECT path FROM rivet_parts").pluck().all() as Array<string>)
    const finals = snapshot(out).finals
    if (finals.every((name) => recorded.has(name))) return { db, finals: new Set(finals) }
    db.exec("ROLLBACK")
  } catch (error) {
    db.close()
    throw error
  }
  db.close()
  return undefined
}

/** Which of `finals` the state database records (read without a lock the CLI would wait for). */
const recordedOf = (stateFile: string, finals: ReadonlyArray<string>): ReadonlyArray<string> => {
  if (finals.length === 0 || !fs.existsSync(stateFile)) return []
  const db = new Database(stateFile, { readonly: true, timeout: 1_000 })
  try {
    const recorded = new Set(db.prepare("SELECT path FROM rivet_parts").pluck().all() as Array<string>)
    return finals.filter((name) => recorded.has(name))
  } finally {
    db.close()
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * Starts `rivet run -c <config>`, watches the destination until `point` is reached and SIGKILLs the CLI there.
 * Fails when the run ends before the point is reached: a crash test that never crashed proves nothing.
 */
export const runAndKill = async (options: {
  readonly config: string
  readonly out: string
  readonly exportName: string
  readonly point: KillPoint
}): Promise<Killed> => {
  const { config, out, exportName, point } = options
  const child = spawn(process.execPath, [BIN, "run", "-c", config], { stdio: ["ignore", "ignore", "pipe"] })
  let stderr = ""
  child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  let ended: { code: number | null; signal: NodeJS.Signals | null } | undefined
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("exit", (code, signal) => resolve((ended = { code, signal })))
  )
  const stateFile = path.join(path.dirname(config), ".rivet_state.db")
  let lock: Database.Database | undefined
  let beforeLock: Set<string> | undefined
  let unrecordedPart: string | undefined
  let committed: ReadonlyArray<string> = []
  try {
    for (;;) {
      if (ended) {
        throw new Error(
          `kill point '${point}' was not reached: the run ended first (exit ${ended.code}); ` +
            `give it more chunks/pages or bigger parts.\n${stderr}`
        )
      }
      const now = snapshot(out)
      const writing = now.temps.some((temp) => temp.size > 0)
      let fire = false
      if (point === "early") {
        fire = stderr.includes(`export '${exportName}' started`)
        if (fire && now.finals.length > 0) throw new Error(`'early' kill came too late: ${now.finals.join(", ")}`)
      } else if (point === "between") {
        if (now.finals.length >= 2 && now.temps.length === 0) committed = recordedOf(stateFile, now.finals)
        fire = committed.length >= 2
      } else if (point === "during") {
        if (writing) committed = recordedOf(stateFile, now.finals)
        fire = committed.length >= 1
      } else if (lock === undefined) {
        const held = now.finals.length >= 1 ? lockWhenAllRecorded(stateFile, out) : undefined
        if (held) {
          lock = held.db
          beforeLock = held.finals
        }
      } else {
        unrecordedPart = now.finals.find((name) => !beforeLock!.has(name))
        committed = [...beforeLock!]
        fire = unrecordedPart !== undefined
      }
      if (fire) {
        child.kill("SIGKILL")
        break
      }
      await sleep(2)
    }
    const { signal } = await exited
    if (signal !== "SIGKILL") throw new Error(`the CLI was to be killed at '${point}' but exited by itself\n${stderr}`)
    return { afterKill: snapshot(out), committed, unrecordedPart, stderr }
  } finally {
    if (!ended) child.kill("SIGKILL")
    if (lock?.inTransaction) lock.exec("ROLLBACK")
    lock?.close()
  }
}

/** The objects the summary's `untracked:` line names (empty when there is no such line). */
export const untrackedOf = (stderr: string): Array<string> => {
  const match = /^\s*untracked:\s+(\d+) object\(s\) from an interrupted attempt, not in the manifest: (.*)$/m.exec(stderr)
  if (!match) return []
  const names = match[2]!.split(", ").map((name) => name.trim())
  if (names.length !== Number(match[1])) throw new Error(`untracked line counts ${match[1]} but names ${names.length}`)
  return names.sort()
}

const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`

/** What a CSV data file of a crash test's table looks like: its header and what a complete row is (id first). */
export interface CsvShape {
  readonly header: string
  readonly isCompleteRow: (fields: ReadonlyArray<string>) => boolean
}

/** crash_src: `id,label,amount,note` with a 256-hex label. */
const CRASH_SRC_CSV: CsvShape = {
  header: "id,label,amount,note",
  isCompleteRow: (fields) => fields.length === 4 && /^\d+$/.test(fields[0]!) && /^[0-9a-f]{256}$/.test(fields[1]!)
}

/** The ids of one data file, read completely: a truncated or partial file throws. */
export const idsOf = async (file: string, csv: CsvShape = CRASH_SRC_CSV): Promise<Array<number>> => {
  const bytes = fs.readFileSync(file)
  if (file.endsWith(".csv")) {
    const text = bytes.toString("utf8")
    if (!text.endsWith("\n")) throw new Error(`${file} does not end with a newline: a partial CSV file`)
    const [header, ...lines] = text.slice(0, -1).split("\n")
    if (header !== csv.header) throw new Error(`${file}: header is ${header}`)
    return lines.map((line, index) => {
      const fields = line.split(",")
      if (!csv.isCompleteRow(fields)) throw new Error(`${file}: line ${index + 2} is not a complete row: ${line}`)
      return Number(fields[0])
    })
  }
  const buffer = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
  const rows = await readRows(buffer)
  return rows.map((row) => Number(row["id"] as bigint))
}

export interface Verified {
  readonly listed: ReadonlyArray<string>
  readonly unlisted: ReadonlyArray<string>
  readonly untracked: ReadonlyArray<string>
  /** Ids over the listed parts that are missing from / repeated against the source (first 10 of each). */
  readonly missing: ReadonlyArray<number>
  readonly duplicated: ReadonlyArray<number>
  readonly rowCount: number
  readonly problems: ReadonlyArray<string>
}

/** Everything the acceptance asks of the destination after a resumed run, gathered for one `expect`. */
export const verifyDestination = async (
  out: string,
  resumeStderr: string,
  sourceIds: ReadonlyArray<number>
): Promise<Verified> => {
  const problems: Array<string> = []
  const manifestBytes = fs.readFileSync(path.join(out, "manifest.json"))
  const manifest = readManifest(out)
  const success = fs.readFileSync(path.join(out, "_SUCCESS"), "utf8")
  if (success !== `${sha256(manifestBytes)}\n`) problems.push(`_SUCCESS is ${JSON.stringify(success)}`)
  const temps = filesUnder(out).filter((file) => file.includes(".tmp-"))
  if (temps.length > 0) problems.push(`temp files left: ${temps.join(", ")}`)
  if (manifest.part_count !== manifest.parts.length) problems.push("part_count differs from parts[]")

  const seen = new Map<number, number>()
  for (const part of manifest.parts) {
    const file = path.join(out, part.path)
    const bytes = fs.readFileSync(file)
    if (bytes.length !== part.size_bytes) problems.push(`${part.path}: ${bytes.length} bytes, manifest ${part.size_bytes}`)
    if (sha256(bytes) !== part.content_fingerprint) problems.push(`${part.path}: sha256 differs from the manifest`)
    const ids = await idsOf(file)
    if (ids.length !== part.rows) problems.push(`${part.path}: ${ids.length} rows, manifest ${part.rows}`)
    for (const id of ids) seen.set(id, (seen.get(id) ?? 0) + 1)
  }
  const source = new Set(sourceIds)
  const listed = manifest.parts.map((part) => part.path).sort()
  if (new Set(listed).size !== listed.length) problems.push("a part is listed twice")
  const unlisted = snapshot(out).finals.filter((name) => !listed.includes(name))
  for (const name of unlisted) {
    // Complete and readable too, even if no manifest lists it: nothing partial under a final name.
    const ids = await idsOf(path.join(out, name)).catch((error: Error) => {
      problems.push(error.message)
      return []
    })
    if (ids.some((id) => !source.has(id))) problems.push(`${name} holds ids the source does not have`)
  }
  return {
    listed,
    unlisted,
    untracked: untrackedOf(resumeStderr),
    missing: sourceIds.filter((id) => !seen.has(id)).slice(0, 10),
    duplicated: [...seen].filter(([id, count]) => count > 1 || !source.has(id)).map(([id]) => id).slice(0, 10),
    rowCount: manifest.row_count,
    problems
  }
}
