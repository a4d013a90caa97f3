import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ProgressReporter, type ExportProgress } from "../runtime/progress.js"
import { formatBytes } from "../runtime/size.js"
import { formatCount, formatDuration, formatRate, renderSummary } from "./render.js"

const write = (text: string) => Effect.sync(() => void process.stderr.write(text))

const statusLine = (progress: ExportProgress): string => {
  const elapsed = Date.now() - progress.startedAt
  return [
    `▸ ${progress.exportName}`,
    `${formatCount(progress.rows)} rows`,
    formatRate(progress.rows, elapsed),
    formatBytes(progress.bytes),
    formatDuration(elapsed)
  ].join("  ")
}

/** A live status line per export, redrawn in place (stderr is a terminal). */
export const ttyProgress: Layer.Layer<ProgressReporter> = Layer.succeed(ProgressReporter, {
  intervalMs: 250,
  started: (progress) => write(`${statusLine(progress)}`),
  tick: (progress) => write(`\r\x1b[2K${statusLine(progress)}`),
  finished: (outcome) => write(`\r\x1b[2K${renderSummary(outcome)}\n`)
})

/** Plain log lines for cron, CI and orchestrators (stderr is not a terminal). */
export const plainProgress: Layer.Layer<ProgressReporter> = Layer.succeed(ProgressReporter, {
  intervalMs: 10_000,
  started: (progress) => write(`rivet: export '${progress.exportName}' started\n`),
  tick: (progress) => write(`rivet: ${statusLine(progress).slice(2)}\n`),
  finished: (outcome) => write(`${renderSummary(outcome)}\n`)
})

export const cliProgress = (): Layer.Layer<ProgressReporter> => (process.stderr.isTTY ? ttyProgress : plainProgress)
