import * as path from "node:path"
import { fileURLToPath } from "node:url"
import type { ExportOutcome } from "../core/progress.js"
import { formatBytes } from "../core/size.js"
import { formatCount, formatDuration, untrackedNote } from "./render.js"
import { renderTable } from "./table.js"

const NONE = "-"

/** A local destination as a path, relative to the working directory when inside it (the table stays narrow). */
export const shownOutput = (uri: string, cwd: string): string => {
  if (uri === "") return NONE
  if (!uri.startsWith("file://")) return uri
  const file = fileURLToPath(uri)
  const relative = path.relative(cwd, file)
  return relative !== "" && !relative.startsWith("..") && !path.isAbsolute(relative) ? relative : file
}

/**
 * The end of `rivet run` on a terminal: one table row per export (instead of a block each: `--verbose` keeps the
 * blocks), a totals line with the run's wall-clock time, and a line per export that left objects of an interrupted attempt outside its manifest.
 */
export const renderRunSummary = (outcomes: ReadonlyArray<ExportOutcome>, elapsedMs: number, cwd = process.cwd()): string => {
  const retries = outcomes.some((outcome) => outcome.retries > 0)
  const done = (outcome: ExportOutcome) => outcome.status !== "failed"
  const table = renderTable(
    ["EXPORT", "STATUS", "ROWS", "FILES", "BYTES", "DURATION", ...(retries ? ["RETRIES"] : []), "OUTPUT"],
    outcomes.map((outcome) => [
      outcome.exportName,
      outcome.status,
      done(outcome) ? formatCount(outcome.rows) : NONE,
      done(outcome) ? formatCount(outcome.files) : NONE,
      done(outcome) ? formatBytes(outcome.bytes) : NONE,
      formatDuration(outcome.durationMs),
      ...(retries ? [formatCount(outcome.retries)] : []),
      shownOutput(outcome.uri, cwd)
    ]),
    ["left", "left", "right", "right", "right", "right", ...(retries ? ["right" as const] : []), "left"]
  )
  const failed = outcomes.filter((outcome) => !done(outcome)).length
  const total = (field: "rows" | "bytes") => outcomes.reduce((sum, outcome) => sum + outcome[field], 0)
  const exports = outcomes.length === 1 ? "1 export" : `${outcomes.length} exports`
  const amount = `${formatCount(total("rows"))} rows, ${formatBytes(total("bytes"))}`
  // The wall-clock time of the whole run, start-up included: what the user waited.
  const totals =
    failed === 0
      ? `${exports} done in ${formatDuration(elapsedMs)}: ${amount}`
      : `${exports} in ${formatDuration(elapsedMs)}: ${outcomes.length - failed} done, ${failed} failed; ${amount}`
  const untracked = outcomes.flatMap((outcome) =>
    outcome.untracked && outcome.untracked.length > 0
      ? [`${outcome.exportName}: ${untrackedNote(outcome.untracked)}`]
      : []
  )
  return [table, totals, ...untracked].join("\n")
}
