import type { RunRecord } from "../state/store.js"

/** One journaled run as `rivet metrics` shows it: how long it took and how fast it went. */
export interface RunMetric {
  readonly run: RunRecord
  /** Undefined while the run is still running (or was never finished: its process died). */
  readonly durationMs: number | undefined
  readonly rowsPerSecond: number | undefined
}

/** Median, 90th percentile and maximum (nearest rank) of successful runs' durations, what a timeout is set from. */
export interface Spread {
  readonly median: number
  readonly p90: number
  readonly max: number
}

export interface ExportMetrics {
  readonly exportName: string
  /** Newest first. */
  readonly runs: ReadonlyArray<RunMetric>
  readonly succeeded: number
  readonly failed: number
  /** Over successful runs only: a failed run's duration says when it failed, not how long the export takes. */
  readonly durationMs: Spread | undefined
  readonly rowsPerSecond: Spread | undefined
  readonly bytes: Spread | undefined
}

const metricOf = (run: RunRecord): RunMetric => {
  const finished = run.finishedAt === undefined ? Number.NaN : Date.parse(run.finishedAt)
  const elapsed = finished - Date.parse(run.startedAt)
  const durationMs = Number.isFinite(elapsed) && elapsed >= 0 ? elapsed : undefined
  return { run, durationMs, rowsPerSecond: durationMs === undefined ? undefined : (run.rows * 1000) / Math.max(durationMs, 1) }
}

/** The value at `fraction` of the sorted values, by nearest rank (p90 of 10 runs is the 9th smallest). */
const rank = (sorted: ReadonlyArray<number>, fraction: number): number =>
  sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(fraction * sorted.length) - 1))]!

export const spreadOf = (values: ReadonlyArray<number>): Spread | undefined => {
  if (values.length === 0) return undefined
  const sorted = [...values].sort((a, b) => a - b)
  return { median: rank(sorted, 0.5), p90: rank(sorted, 0.9), max: sorted[sorted.length - 1]! }
}

/** The metrics of an export's journaled runs, given newest first. */
export const exportMetrics = (exportName: string, runs: ReadonlyArray<RunRecord>): ExportMetrics => {
  const metrics = runs.map(metricOf)
  const successful = metrics.filter((metric) => metric.run.status === "success" && metric.durationMs !== undefined)
  return {
    exportName,
    runs: metrics,
    succeeded: metrics.filter((metric) => metric.run.status === "success").length,
    failed: metrics.filter((metric) => metric.run.status === "failed").length,
    durationMs: spreadOf(successful.map((metric) => metric.durationMs!)),
    rowsPerSecond: spreadOf(successful.map((metric) => metric.rowsPerSecond!)),
    bytes: spreadOf(successful.map((metric) => metric.run.bytes))
  }
}
