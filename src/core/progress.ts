import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { PartRecord } from "./manifest.js"

/**
 * Where one running export stands, as a snapshot: what its successful units wrote plus what its running units have
 * written so far (a unit that fails and is read again is never counted twice). Reporters get a new one each time.
 */
export interface ExportProgress {
  readonly exportName: string
  readonly startedAt: number
  readonly rows: number
  readonly bytes: number
  readonly parts: number
  readonly retries: number
  /**
   * The rows the export is expected to write, from the source's statistics (what `rivet plan` shows as
   * `estimated_rows`); undefined when the source cannot tell or the estimate failed. Known from `started` on.
   */
  readonly estimatedRows?: number | undefined
  /** Chunked and keyset runs: chunks or pages done so far, and the planned total when known. */
  readonly units?: { readonly done: number; readonly total?: number | undefined; readonly label: "chunks" | "pages" } | undefined
}

/** How one export ended, as reported to `ProgressReporter.finished` (and printed by the CLI's summary). */
export interface ExportOutcome {
  readonly exportName: string
  readonly runId: string
  readonly status: "success" | "failed" | "skipped"
  readonly mode?: string | undefined
  /** A resumed run: objects an interrupted attempt wrote that no manifest lists (left in place, not deleted). */
  readonly untracked?: ReadonlyArray<string> | undefined
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
  /** A part became visible under its final key. */
  readonly partCommitted?: (exportName: string, part: PartRecord) => Effect.Effect<void>
  /** Something the user should know that is not an error (a default chosen for them, a skipped step). */
  readonly notice: (exportName: string, message: string) => Effect.Effect<void>
  /** How often `tick` is called while an export runs. */
  readonly intervalMs: number
}

/** The service that receives progress; provide your own layer to `runExports` to observe a run. */
export class ProgressReporter extends Context.Tag("rivet/ProgressReporter")<ProgressReporter, ProgressReporterShape>() {}

/** A reporter that reports nothing: the library's default. */
export const silentProgress: Layer.Layer<ProgressReporter> = Layer.succeed(ProgressReporter, {
  started: () => Effect.void,
  tick: () => Effect.void,
  finished: () => Effect.void,
  notice: () => Effect.void,
  intervalMs: 60_000
})
