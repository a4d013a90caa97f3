import * as Console from "effect/Console"
import * as Layer from "effect/Layer"
import { ProgressReporter, type ExportProgress } from "../core/progress.js"
import { formatBytes } from "../core/size.js"
import { formatCount, formatDuration, formatRate, renderSummary } from "./render.js"
import { liveProgress } from "./live-view.js"
import { isTerminal } from "./terminal.js"

/** A plain status line: `orders  3/12 chunks  1,040,000 rows  81.2K rows/s  36.1 MiB  12.8s`. */
const statusLine = (progress: ExportProgress): string => {
  const elapsed = Date.now() - progress.startedAt
  return [
    progress.exportName,
    ...(progress.units
      ? [`${progress.units.done}${progress.units.total === undefined ? "" : `/${progress.units.total}`} ${progress.units.label}`]
      : []),
    `${formatCount(progress.rows)} rows`,
    formatRate(progress.rows, elapsed),
    formatBytes(progress.bytes),
    formatDuration(elapsed)
  ].join("  ")
}

/** Plain log lines for cron, CI and orchestrators (stderr is not a terminal): no escape codes. */
export const plainProgress: Layer.Layer<ProgressReporter> = Layer.succeed(ProgressReporter, {
  intervalMs: 10_000,
  started: (progress) => Console.error(`rivet: export '${progress.exportName}' started`),
  tick: (progress) => Console.error(`rivet: ${statusLine(progress)}`),
  finished: (outcome) => Console.error(renderSummary(outcome)),
  notice: (exportName, message) => Console.error(`rivet: export '${exportName}': ${message}`)
})

/**
 * The live view on a terminal (`verbose`: a block per finished export instead of the closing table), else plain
 * lines: also on a terminal that reports no width (a pseudo-terminal nobody sized), where lines cannot be fitted,
 * and when an export writes its rows to stdout and stdout is the terminal too.
 */
export const cliProgress = (options: { readonly verbose: boolean; readonly dataOnStdout: boolean }): Layer.Layer<ProgressReporter> =>
  isTerminal("stderr") && (process.stderr.columns ?? 0) > 0 && !(options.dataOnStdout && isTerminal("stdout"))
    ? liveProgress(options)
    : plainProgress

/** One `--json` event line on stderr. */
export const event = (name: string, fields: Record<string, unknown>) =>
  Console.error(JSON.stringify({ event: name, time: new Date().toISOString(), ...fields }))

/**
 * `--json`: one JSON object per line on stderr for orchestrators — run_started, progress, part_committed,
 * warning, export_finished (and error, from the command). No human progress line.
 */
export const jsonProgress: Layer.Layer<ProgressReporter> = Layer.succeed(ProgressReporter, {
  intervalMs: 5_000,
  started: (progress) => event("run_started", { export: progress.exportName }),
  tick: (progress) =>
    event("progress", {
      export: progress.exportName,
      rows: progress.rows,
      bytes: progress.bytes,
      parts: progress.parts,
      retries: progress.retries,
      estimated_rows: progress.estimatedRows ?? null,
      elapsed_ms: Date.now() - progress.startedAt,
      ...(progress.units ? { [`${progress.units.label}_done`]: progress.units.done, [`${progress.units.label}_total`]: progress.units.total } : {})
    }),
  partCommitted: (exportName, part) => event("part_committed", { export: exportName, ...part }),
  notice: (exportName, message) => event("warning", { export: exportName, message }),
  finished: (outcome) =>
    event("export_finished", {
      export: outcome.exportName,
      run_id: outcome.runId,
      status: outcome.status,
      mode: outcome.mode,
      rows: outcome.rows,
      files: outcome.files,
      bytes: outcome.bytes,
      retries: outcome.retries,
      duration_ms: outcome.durationMs,
      uri: outcome.uri,
      ...(outcome.untracked && outcome.untracked.length > 0 ? { untracked: outcome.untracked } : {}),
      ...(outcome.error ? { error: outcome.error } : {})
    })
})
