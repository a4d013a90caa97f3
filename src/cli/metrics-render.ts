import { formatBytes } from "../core/size.js"
import { formatCount, formatDuration, formatRate } from "./render.js"
import type { ExportMetrics, RunMetric, Spread } from "./run-metrics.js"
import { renderTable } from "./table.js"

/** What `rivet metrics` prints: a table of recent runs per export and the spread a timeout is set from. */

const NONE = "-"

/** ISO-8601 UTC to the second: the journal's milliseconds add nothing to a list of runs. */
const second = (iso: string): string => iso.replace(/\.\d+Z$/, "Z")

const runRow = (metric: RunMetric): ReadonlyArray<string> => [
  second(metric.run.startedAt),
  metric.run.status,
  metric.durationMs === undefined ? NONE : formatDuration(metric.durationMs),
  formatCount(metric.run.rows),
  metric.rowsPerSecond === undefined ? NONE : formatRate(Math.round(metric.rowsPerSecond), 1000).replace(" rows/s", ""),
  formatBytes(metric.run.bytes),
  metric.run.mode
]

const spreadLine = (metrics: ExportMetrics): string => {
  const { durationMs, rowsPerSecond, bytes } = metrics
  const counted = `successful runs (${metrics.succeeded} of ${metrics.runs.length})`
  if (!durationMs || !rowsPerSecond || !bytes) return `${counted}: none finished to measure`
  return (
    `${counted}: duration median ${formatDuration(durationMs.median)}, p90 ${formatDuration(durationMs.p90)}, ` +
    `max ${formatDuration(durationMs.max)}; median ${formatRate(Math.round(rowsPerSecond.median), 1000)}, ${formatBytes(bytes.median)}`
  )
}

export const renderMetrics = (all: ReadonlyArray<ExportMetrics>): string =>
  all
    .map((metrics) =>
      metrics.runs.length === 0
        ? `${metrics.exportName}: no runs recorded yet`
        : [
            `${metrics.exportName}: ${metrics.runs.length === 1 ? "the last run" : `the last ${metrics.runs.length} runs, newest first`}`,
            renderTable(
              ["STARTED", "STATUS", "DURATION", "ROWS", "ROWS/S", "BYTES", "MODE"],
              metrics.runs.map(runRow),
              ["left", "left", "right", "right", "right", "right", "left"]
            ),
            spreadLine(metrics)
          ].join("\n")
    )
    .join("\n\n")

const spreadJson = (spread: Spread | undefined, round: (value: number) => number = Math.round) =>
  spread ? { median: round(spread.median), p90: round(spread.p90), max: round(spread.max) } : null

export const metricsJson = (all: ReadonlyArray<ExportMetrics>) =>
  all.map((metrics) => ({
    export_name: metrics.exportName,
    runs: metrics.runs.map(({ run, durationMs, rowsPerSecond }) => ({
      run_id: run.runId,
      mode: run.mode,
      status: run.status,
      started_at: run.startedAt,
      finished_at: run.finishedAt ?? null,
      duration_ms: durationMs ?? null,
      rows: run.rows,
      rows_per_second: rowsPerSecond === undefined ? null : Math.round(rowsPerSecond),
      bytes: run.bytes,
      parts: run.parts
    })),
    summary: {
      runs: metrics.runs.length,
      succeeded: metrics.succeeded,
      failed: metrics.failed,
      duration_ms: spreadJson(metrics.durationMs),
      rows_per_second: spreadJson(metrics.rowsPerSecond),
      bytes: spreadJson(metrics.bytes)
    }
  }))
