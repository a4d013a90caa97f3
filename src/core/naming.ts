import { randomBytes } from "node:crypto"

const pad = (value: number, width = 2): string => String(value).padStart(width, "0")

const utcParts = (at: Date) => ({
  date: `${at.getUTCFullYear()}${pad(at.getUTCMonth() + 1)}${pad(at.getUTCDate())}`,
  time: `${pad(at.getUTCHours())}${pad(at.getUTCMinutes())}${pad(at.getUTCSeconds())}`,
  millis: pad(at.getUTCMilliseconds(), 3)
})

/** `{export}_{YYYYMMDD}T{HHMMSS}.{mmm}` (UTC) — identifies one run of one export. */
export const makeRunId = (exportName: string, startedAt: Date): string => {
  const { date, time, millis } = utcParts(startedAt)
  return `${exportName}_${date}T${time}.${millis}`
}

/**
 * Names the parts of a single-runner export: `{export}_{YYYYMMDD}_{HHMMSS}_{mmm}.{ext}` (UTC, when the
 * first part is opened). With `max_file_size` set every part is suffixed `_part{N}` (N from 0) — a
 * streamed object cannot be renamed once we learn whether a second part follows.
 */
export const singleRunnerPartName = (
  exportName: string,
  openedAt: Date,
  extension: string,
  part: number,
  sizeSplit: boolean
): string => {
  const { date, time, millis } = utcParts(openedAt)
  const suffix = sizeSplit ? `_part${part}` : ""
  return `${exportName}_${date}_${time}_${millis}${suffix}.${extension}`
}

/** `{export}_{YYYYMMDD}_{HHMMSS}_chunk` — every part of one chunked run starts with it. */
export const chunkRunStem = (exportName: string, runStartedAt: Date): string => {
  const { date, time } = utcParts(runStartedAt)
  return `${exportName}_${date}_${time}_chunk`
}

/**
 * A chunked run's part: `{export}_{YYYYMMDD}_{HHMMSS}_chunk{N}_{nonce}.{ext}` (run start, UTC), `_p{i}` added when
 * `max_file_size` splits chunks. The nonce (16 hex) differs per attempt, so a chunk redone after a crash never
 * overwrites — or is mistaken for — what an earlier attempt left.
 */
export const chunkPartName = (
  exportName: string,
  runStartedAt: Date,
  chunk: number,
  nonce: string,
  extension: string,
  part: number,
  sizeSplit: boolean
): string => `${chunkAttemptStem(exportName, runStartedAt, chunk, nonce)}${sizeSplit ? `_p${part}` : ""}.${extension}`

/** What every part of one attempt at a chunk starts with: `{export}_{YYYYMMDD}_{HHMMSS}_chunk{N}_{nonce}`. */
export const chunkAttemptStem = (exportName: string, runStartedAt: Date, chunk: number, nonce: string): string =>
  `${chunkRunStem(exportName, runStartedAt)}${chunk}_${nonce}`

/** `{export}_{YYYYMMDD}T{HHMMSS}_{mmm}_page` — every part of one keyset run starts with it. */
export const pageRunStem = (exportName: string, runStartedAt: Date): string => {
  const { date, time, millis } = utcParts(runStartedAt)
  return `${exportName}_${date}T${time}_${millis}_page`
}

/**
 * A keyset run's part: `{export}_{YYYYMMDD}T{HHMMSS}_{mmm}_page{N}.{ext}`, from the run id and the page number,
 * `_p{i}` added when `max_file_size` splits pages. A page re-read after a crash overwrites its own part.
 */
export const pagePartName = (
  exportName: string,
  runStartedAt: Date,
  page: number,
  extension: string,
  part: number,
  sizeSplit: boolean
): string => `${pageRunStem(exportName, runStartedAt)}${page}${sizeSplit ? `_p${part}` : ""}.${extension}`

/**
 * A change run's part: `{export}_changes_{from}_{NNNNNN}.{ext}`, from the change-log position the run started after
 * (its characters other than letters and digits as `-`) and the part number; `_snapshot_` instead of `_changes_` for
 * the first run, which starts with the table's snapshot. A run that reads the same changes again after a crash
 * writes the same names, overwriting what the crashed run left rather than adding to it.
 */
export const changePartName = (exportName: string, snapshot: boolean, from: string, extension: string, part: number): string =>
  `${exportName}_${snapshot ? "snapshot" : "changes"}_${from.replace(/[^A-Za-z0-9]+/g, "-")}_${pad(part, 6)}.${extension}`

/**
 * How a mode names its parts, placeholders in braces, for plans (`rivet plan`): `single` — full, incremental,
 * time_window — `chunk`, `page` and `changes` as the functions above name them.
 */
export const partNamePattern = (
  runner: "single" | "chunk" | "page" | "changes",
  exportName: string,
  extension: string,
  sizeSplit: boolean
): string => {
  switch (runner) {
    case "single":
      return `${exportName}_{YYYYMMDD}_{HHMMSS}_{mmm}${sizeSplit ? "_part{N}" : ""}.${extension}`
    case "chunk":
      return `${exportName}_{YYYYMMDD}_{HHMMSS}_chunk{N}_{nonce}${sizeSplit ? "_p{i}" : ""}.${extension}`
    case "page":
      return `${exportName}_{YYYYMMDD}T{HHMMSS}_{mmm}_page{N}${sizeSplit ? "_p{i}" : ""}.${extension}`
    case "changes":
      return `${exportName}_{changes|snapshot}_{position}_{NNNNNN}.${extension}`
  }
}

/** 16 random hex digits. */
export const makeNonce = (): string => randomBytes(8).toString("hex")

export const MANIFEST_KEY = "manifest.json"
export const SUCCESS_KEY = "_SUCCESS"
/** Every run's manifest is kept under this folder of the destination, named by its run id. */
export const KEPT_MANIFESTS_DIR = "_manifests/"

/** The names of one export's markers at its destination (docs/cloud-destinations.md#markers). */
export interface MarkerKeys {
  /** The latest published run's manifest. */
  readonly manifest: string
  /** `sha256:<hex of the manifest bytes>\n`, written last. */
  readonly success: string
  /** The kept copy of a run's manifest: `_manifests/{run_id}.json`, byte for byte what `manifest` held. */
  readonly kept: (runId: string) => string
  /** The run id a key names when it is one of this export's kept manifests, or undefined. */
  readonly keptRunId: (key: string) => string | undefined
}

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\-]/g, "\\$&")

/**
 * An export alone at its destination keeps the names of the single-export layout (`manifest.json`, `_SUCCESS`);
 * exports sharing one destination each get their own (`{export}.manifest.json`, `_SUCCESS.{export}`). Kept manifests
 * are `_manifests/{run_id}.json` in both layouts: a run id is the export name and a tail of fixed shape
 * (`_{YYYYMMDD}T{HHMMSS}.{mmm}`, `-{4 hex}` when two runs started in one millisecond), so matched whole, one
 * export's kept manifests can never be mistaken for another's.
 */
export const markerKeys = (exportName: string, sharedDestination: boolean): MarkerKeys => {
  const kept = new RegExp(`^${escapeRegExp(KEPT_MANIFESTS_DIR)}(${escapeRegExp(exportName)}_\\d{8}T\\d{6}\\.\\d{3}(?:-[0-9a-f]{4})?)\\.json$`)
  return {
    manifest: sharedDestination ? `${exportName}.${MANIFEST_KEY}` : MANIFEST_KEY,
    success: sharedDestination ? `${SUCCESS_KEY}.${exportName}` : SUCCESS_KEY,
    kept: (runId) => `${KEPT_MANIFESTS_DIR}${runId}.json`,
    keptRunId: (key) => kept.exec(key)?.[1]
  }
}

/**
 * What every data part of an export starts with: `{export}_{YYYYMMDD}_{HHMMSS}` or `{export}_{YYYYMMDD}T{HHMMSS}`
 * (the date and time captured). Validation counts an object as this export's when its key matches.
 */
export const partNameStart = (exportName: string): RegExp =>
  new RegExp(`^${escapeRegExp(exportName)}_(\\d{4})(\\d{2})(\\d{2})[_T](\\d{2})(\\d{2})(\\d{2})`)
