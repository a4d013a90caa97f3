import type { RivetError } from "../core/errors.js"
import type { ExportOutcome } from "../core/progress.js"
import { formatBytes } from "../core/size.js"

// Terminal control bytes from a database or server message must not reach the user's terminal.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g

/** Above this, the middle of a path, message or hint (a pasted blob echoed back) is elided. */
const MAX_PART = 1000

/** One line of text: no control bytes, newlines shown as \n (a YAML key may hold one), a bounded length. */
const oneLine = (text: string, max = MAX_PART): string => {
  const flat = text.replace(/\r?\n|\r/g, "\\n").replace(CONTROL, "")
  if (flat.length <= max) return flat
  const keep = Math.floor(max / 2)
  return `${flat.slice(0, keep)}…[${flat.length - 2 * keep} characters]…${flat.slice(-keep)}`
}

/** One readable error (plus hint) for the terminal: exactly one `Error:` line, never a stack trace. */
export const renderError = (error: RivetError): string => {
  const where = error._tag === "ConfigError" ? `${oneLine(error.path, 200)}: ` : ""
  const lines = [`Error: ${where}${oneLine(error.message)}`]
  if (error.hint) lines.push(`Hint: ${oneLine(error.hint)}`)
  return lines.join("\n")
}

export const formatCount = (value: number): string => value.toLocaleString("en-US")

export const formatDuration = (ms: number): string => {
  if (ms < 1000) return `${Math.round(ms)}ms`
  const seconds = ms / 1000
  if (seconds < 60) return `${seconds.toFixed(1)}s`
  const minutes = Math.floor(seconds / 60)
  const rest = (seconds - minutes * 60).toFixed(1).padStart(4, "0")
  if (minutes < 60) return `${minutes}m ${rest}s`
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, "0")}m ${rest}s`
}

export const formatRate = (rows: number, ms: number): string => {
  const perSecond = ms > 0 ? (rows * 1000) / ms : 0
  if (perSecond >= 1_000_000) return `${(perSecond / 1_000_000).toFixed(1)}M rows/s`
  if (perSecond >= 1_000) return `${(perSecond / 1_000).toFixed(1)}K rows/s`
  return `${Math.round(perSecond)} rows/s`
}

/** Objects a resumed run found from its interrupted attempt: left in place, listed by no manifest. */
export const untrackedNote = (untracked: ReadonlyArray<string>): string =>
  `${untracked.length} object(s) from an interrupted attempt, not in the manifest: ${untracked.join(", ")}`

/** The per-export summary block printed on stderr when an export ends. */
export const renderSummary = (outcome: ExportOutcome): string => {
  const rows: Array<[string, string]> = []
  if (outcome.runId) rows.push(["run_id", outcome.runId])
  rows.push(["status", outcome.status])
  if (outcome.mode && outcome.mode !== "full") rows.push(["mode", outcome.mode])
  if (outcome.status === "success") {
    rows.push(["rows", formatCount(outcome.rows)])
    rows.push(["files", formatCount(outcome.files)])
    rows.push(["bytes", formatBytes(outcome.bytes)])
    if (outcome.files > 0 || outcome.uri) rows.push(["output", outcome.uri])
    if (outcome.retries > 0) rows.push(["retries", formatCount(outcome.retries)])
    rows.push(["throughput", formatRate(outcome.rows, outcome.durationMs)])
  }
  if (outcome.untracked && outcome.untracked.length > 0) rows.push(["untracked", untrackedNote(outcome.untracked)])
  rows.push(["duration", formatDuration(outcome.durationMs)])
  if (outcome.error) rows.push(["error", outcome.error])
  const width = Math.max(...rows.map(([label]) => label.length)) + 2
  const header = `── ${outcome.exportName} `.padEnd(60, "─")
  return [header, ...rows.map(([label, value]) => `  ${`${label}:`.padEnd(width)}${value}`)].join("\n")
}
