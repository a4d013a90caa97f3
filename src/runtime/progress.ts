import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"

/** Live counters of one running export, updated by the pipeline and read by reporters. */
export interface ExportProgress {
  readonly exportName: string
  readonly startedAt: number
  rows: number
  bytes: number
  parts: number
  retries: number
}

export interface ExportOutcome {
  readonly exportName: string
  readonly runId: string
  readonly status: "success" | "failed"
  readonly rows: number
  readonly files: number
  readonly bytes: number
  readonly retries: number
  readonly durationMs: number
  readonly uri: string
  readonly error?: string | undefined
}

/** Where progress goes: a TTY line, plain log lines, JSON events, or nowhere (library use). */
export interface ProgressReporterShape {
  readonly started: (progress: ExportProgress) => Effect.Effect<void>
  readonly tick: (progress: ExportProgress) => Effect.Effect<void>
  readonly finished: (outcome: ExportOutcome) => Effect.Effect<void>
  /** How often `tick` is called while an export runs. */
  readonly intervalMs: number
}

export class ProgressReporter extends Context.Tag("rivet/ProgressReporter")<ProgressReporter, ProgressReporterShape>() {}

export const silentProgress: Layer.Layer<ProgressReporter> = Layer.succeed(ProgressReporter, {
  started: () => Effect.void,
  tick: () => Effect.void,
  finished: () => Effect.void,
  intervalMs: 60_000
})
