import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import type { ExportConfig } from "../config/model.js"
import type { Manifest, PartRecord } from "../core/manifest.js"
import { ProgressReporter } from "../core/progress.js"
import type { RunJournal } from "./modes/mode.js"
import { cleanUpUploads, sweepTempFiles } from "./run/cleanup.js"
import { executeMode } from "./run/execute-step.js"
import type { ExportRun } from "./run/export-run.js"
import { journalRun } from "./run/journal-step.js"
import { takeRunLease, whileLeaseHeld } from "./run/lease-step.js"
import { openExportRun } from "./run/open-run.js"
import { prepareRun } from "./run/prepare-step.js"
import { publishRun, type PublishedRun } from "./run/publish-step.js"
import { recordRun, recordUnpublished } from "./run/record-step.js"
import type { RunOptions } from "./run/run-options.js"
import { exportDuration } from "./telemetry/metrics.js"

/** What one export produced. */
export interface ExportResult {
  readonly exportName: string
  readonly runId: string
  /**
   * `skipped`: `skip_empty` was set and the run found no rows, so nothing was written. `joined`: a worker
   * (`--worker`) whose run another worker published.
   */
  readonly status: "success" | "skipped" | "joined"
  readonly mode: ExportConfig["mode"]["kind"]
  /** True when this run continued an interrupted checkpointed run. */
  readonly resumed: boolean
  readonly rows: number
  readonly bytes: number
  readonly retries: number
  readonly parts: ReadonlyArray<PartRecord>
  /** The URI of the destination root. */
  readonly uri: string
  /** Absent for destinations without markers (stdout) and for skipped runs. */
  readonly manifest?: Manifest | undefined
  /** Objects an interrupted attempt of this run left that the manifest does not list (resumed runs only). */
  readonly untracked: ReadonlyArray<string>
  /** The statements this run executed, in unit order, parameters inline (as `rivet plan` shows them). */
  readonly statements: ReadonlyArray<string>
  readonly durationMs: number
}

/**
 * Runs one export: lease → journal → execute the mode's units (one query, chunks or pages) → publish (`manifest.json`,
 * `_SUCCESS`) → record (the run, its parts and cursor in the state). State advances only after `_SUCCESS` is written;
 * a run that fails or is interrupted leaves the cursor where it was and is journaled as such. Everything opened
 * (cursors, uploads) is released — uploads aborted — when a unit fails or is interrupted; whatever the outcome,
 * uploads still pending under the run's keys (a lost begin response) are aborted when the export ends. Each step is
 * a function of its own in `run/` (docs/architecture.md, "The run").
 */
export const runExport = Effect.fn("Pipeline.runExport")(
  function* (spec: ExportConfig, options: RunOptions) {
    const reporter = yield* ProgressReporter
    yield* Effect.annotateCurrentSpan({ "rivet.export": spec.name, "rivet.mode": spec.mode.kind })
    for (const notice of spec.notices ?? []) yield* reporter.notice(spec.name, `${notice.path}: ${notice.message}`)
    // Before the lease: the run's duration includes any wait for another run holding it.
    const startedAt = yield* Clock.currentTimeMillis
    const taken = yield* takeRunLease(spec, options)
    const run = yield* openExportRun(spec, options, startedAt, taken)
    yield* sweepTempFiles(run)
    const prepared = yield* prepareRun(run)
    const journal = yield* journalRun(run, prepared)
    const published = yield* whileLeaseHeld(
      run.lease,
      Effect.flatMap(executeMode(run, prepared, journal), (outcome) => publishRun(run, journal, outcome))
    ).pipe(
      Effect.flatMap((published) => recordRun(run, prepared, journal, published)),
      Effect.tap((published) => afterRecorded(run, published)),
      Effect.onError((cause) => recordUnpublished(run, journal, cause)),
      Effect.ensuring(cleanUpUploads(run))
    )
    return yield* exportResultOf(run, journal, published)
  },
  Effect.scoped,
  Effect.tapError((error) => Effect.annotateCurrentSpan("rivet.error.kind", error._tag))
)

/** The mode's step after a recorded run; a failure there is reported, the run stays a success. */
const afterRecorded = ({ ctx }: ExportRun, published: PublishedRun) => {
  const step = published.status === "success" ? published.outcome.afterRecorded : undefined
  if (step === undefined) return Effect.void
  return Effect.catchAll(step, (error) =>
    ctx.reporter.notice(ctx.spec.name, `the run is published and recorded, but ${error.message}${error.hint === undefined ? "" : ` (${error.hint})`}`)
  )
}

/** The export's result, also recorded on its span (this runs in it) and in the export-duration metric. */
const exportResultOf = ({ ctx, startedAt }: ExportRun, journal: RunJournal, published: PublishedRun) =>
  Effect.gen(function* () {
    const { outcome, total, manifest, untracked, status } = published
    const reached = yield* ctx.progress.snapshot
    const durationMs = ctx.now().getTime() - startedAt
    yield* Metric.update(exportDuration, durationMs / 1000).pipe(Effect.tagMetrics("export", ctx.spec.name))
    yield* Effect.annotateCurrentSpan({
      "rivet.run_id": journal.runId,
      "rivet.status": status,
      "rivet.rows": total.rows,
      "rivet.bytes": reached.bytes,
      "rivet.parts": total.parts,
      "rivet.retries": reached.retries
    })
    return {
      exportName: ctx.spec.name,
      runId: journal.runId,
      status,
      mode: ctx.spec.mode.kind,
      resumed: journal.resumed,
      rows: total.rows,
      bytes: reached.bytes,
      retries: reached.retries,
      parts: outcome.parts,
      uri: ctx.sink.uri(),
      manifest,
      untracked,
      statements: outcome.statements ?? [],
      durationMs
    } satisfies ExportResult
  })
