import type { ExportProgress } from "../core/progress.js"
import { formatBytes } from "../core/size.js"
import { formatCount, formatDuration, formatRate } from "./render.js"

/** What the terminal view knows of one running export: its latest progress and the (time, rows) seen lately. */
export interface Lane {
  readonly progress: ExportProgress
  readonly samples: ReadonlyArray<Sample>
}

export interface Sample {
  readonly at: number
  readonly rows: number
}

/** A slow start-up step shown with a spinner until it ends ("starting the embedded PostgreSQL…"). */
export interface Step {
  readonly label: string
  readonly since: number
}

/** The rate over the last few seconds follows a run that speeds up or slows down; older samples are dropped. */
const WINDOW_MS = 10_000
const BAR_WIDTH = 20
const SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"

/** Keeps the samples of the last WINDOW_MS (and always the newest two, so a rate can be measured). */
export const addSample = (samples: ReadonlyArray<Sample>, sample: Sample): ReadonlyArray<Sample> => {
  const kept = samples.filter((old) => sample.at - old.at <= WINDOW_MS)
  return [...(kept.length === 0 && samples.length > 0 ? [samples[samples.length - 1]!] : kept), sample]
}

/** Rows per second over the samples' span once it reaches a second, else since the export started. */
export const currentRate = (lane: Lane, now: number): number => {
  const first = lane.samples[0]
  const last = lane.samples[lane.samples.length - 1]
  if (first && last && last.at - first.at >= 1000) return ((last.rows - first.rows) * 1000) / (last.at - first.at)
  const elapsed = now - lane.progress.startedAt
  return elapsed > 0 ? (lane.progress.rows * 1000) / elapsed : 0
}

/**
 * How far the export is, from the source's row estimate, else from its planned chunks or pages: a fraction up to
 * 1, or "over" once the rows pass the estimate (statistics are approximate: no 140 %), or undefined when unknown.
 * At 1 (every estimated row read) the export is still writing its last part and manifest.
 */
export const completion = (progress: ExportProgress): { readonly fraction: number; readonly by: "rows" | "units" } | "over" | undefined => {
  const estimate = progress.estimatedRows
  if (estimate !== undefined && estimate > 0) {
    return progress.rows > estimate ? "over" : { fraction: progress.rows / estimate, by: "rows" }
  }
  const units = progress.units
  if (units?.total !== undefined && units.total > 0 && units.done <= units.total) return { fraction: units.done / units.total, by: "units" }
  return undefined
}

/** "12s", "4m 05s", "2h 03m": an estimate needs no tenths. */
export const formatEta = (ms: number): string => {
  const seconds = Math.max(1, Math.round(ms / 1000))
  if (seconds < 60) return `${seconds}s`
  const minutes = Math.floor(seconds / 60)
  if (minutes < 60) return `${minutes}m ${String(seconds % 60).padStart(2, "0")}s`
  return `${Math.floor(minutes / 60)}h ${String(minutes % 60).padStart(2, "0")}m`
}

/** Counts below 100 000 exactly, larger ones to three digits (1.2M, 555.9K): the live line must stay short. */
export const formatShort = (value: number): string =>
  value < 100_000 ? formatCount(value) : value < 1_000_000 ? `${(value / 1000).toFixed(1)}K` : `${(value / 1_000_000).toFixed(value < 10_000_000 ? 2 : 1)}M`

const bar = (fraction: number): string => {
  const filled = Math.min(BAR_WIDTH, Math.floor(fraction * BAR_WIDTH))
  return "█".repeat(filled) + "░".repeat(BAR_WIDTH - filled)
}

/** A bar with no known end: a block that sweeps back and forth. */
const sweep = (now: number): string => {
  const span = BAR_WIDTH - 4
  const step = Math.floor(now / 100) % (2 * span)
  const at = step < span ? step : 2 * span - step
  return "░".repeat(at) + "████" + "░".repeat(span - at)
}

const spinner = (now: number): string => SPINNER[Math.floor(now / 100) % SPINNER.length]!

const eta = (lane: Lane, now: number, fraction: number, by: "rows" | "units"): string => {
  const progress = lane.progress
  if (fraction >= 1) return "finishing"
  if (by === "units") {
    const elapsed = now - progress.startedAt
    return fraction > 0 ? `ETA ${formatEta((elapsed * (1 - fraction)) / fraction)}` : "ETA …"
  }
  const rate = currentRate(lane, now)
  const remaining = (progress.estimatedRows ?? 0) - progress.rows
  return rate > 0 ? `ETA ${formatEta((remaining * 1000) / rate)}` : "ETA …"
}

/** The live line of one running export: bar, percent and ETA when the end is known, then counters. */
export const exportLine = (lane: Lane, now: number): string => {
  const progress = lane.progress
  const done = completion(progress)
  const estimate = progress.estimatedRows
  const rows =
    estimate !== undefined && done !== "over"
      ? `${formatShort(progress.rows)}/~${formatShort(estimate)} rows`
      : `${formatShort(progress.rows)} rows${done === "over" ? ` (past the ~${formatShort(estimate ?? 0)} estimate)` : ""}`
  const units = progress.units
  // Most telling first: a narrow terminal cuts the end of the line.
  return [
    `${spinner(now)} ${progress.exportName}`,
    ...(done === "over" ? [sweep(now)] : done ? [bar(done.fraction), `${Math.floor(done.fraction * 100)}%`.padStart(4), eta(lane, now, done.fraction, done.by)] : []),
    rows,
    ...(units ? [`${units.done}${units.total === undefined ? "" : `/${units.total}`} ${units.label}`] : []),
    ...(progress.retries > 0 ? [`${formatCount(progress.retries)} ${progress.retries === 1 ? "retry" : "retries"}`] : []),
    formatDuration(now - progress.startedAt),
    formatRate(Math.round(currentRate(lane, now)), 1000),
    formatBytes(progress.bytes)
  ].join("  ")
}

export const stepLine = (step: Step, now: number): string => `${spinner(now)} ${step.label}  ${formatDuration(now - step.since)}`

/**
 * The exports that have finished, newest last, under the live lines (each leaves the view when it ends): as many of
 * the newest as fit the width. A failed one is marked ✗.
 */
export const finishedLine = (outcomes: ReadonlyArray<{ readonly exportName: string; readonly status: string }>, columns: number): string => {
  const head = `✓ ${outcomes.length} done: `
  const names = outcomes.map((outcome) => `${outcome.status === "failed" ? "✗ " : ""}${outcome.exportName}`)
  const room = Math.max(10, columns - 1) - head.length
  const kept: Array<string> = []
  for (let i = names.length - 1, used = 0; i >= 0; i--) {
    const name = names[i]!
    if (used + name.length + 2 > room && kept.length > 0) return `${head}…, ${kept.join(", ")}`
    kept.unshift(name)
    used += name.length + 2
  }
  return head + kept.join(", ")
}

/** Cuts a line to the terminal's width, so it never wraps (a wrapped line would break the redraw). */
export const fitWidth = (line: string, columns: number): string => {
  const chars = Array.from(line)
  const max = Math.max(10, columns - 1)
  return chars.length <= max ? line : `${chars.slice(0, max - 1).join("")}…`
}
