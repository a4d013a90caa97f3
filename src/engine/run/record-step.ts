import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ExportConfig } from "../../config/model.js"
import { describeCause, type RivetError, StateError } from "../../core/errors.js"
import type { PreparedMode, RunJournal } from "../modes/mode.js"
import type { ExportRun } from "./export-run.js"
import type { PublishedRun } from "./publish-step.js"
import { cursorToStore } from "./store-cursor.js"

/** What the next run does when a published run of a mode that keeps no cursor could not record its state. */
const nextRunAfterUnrecorded = (spec: ExportConfig, prepared: PreparedMode): string =>
  prepared.checkpointed
    ? "the run stays unfinished in the state: the next run refuses to start until `rivet run --resume` publishes it again from its recorded chunks or pages, or `rivet state reset` forgets it"
    : `the next run exports its rows again as every run of mode: ${spec.mode.kind} does; only this run's journal entry and file records are missing`

/**
 * The published run's state, written under its lease in one transaction: its outcome, the parts not recorded yet and
 * the cursor it reached (compare-and-set); then the schema it wrote becomes the baseline. A run not published here
 * (skipped, joined) has nothing more to record.
 */
export const recordRun = Effect.fn("Run.record")(function* (
  run: ExportRun,
  prepared: PreparedMode,
  journal: RunJournal,
  published: PublishedRun
) {
  const { outcome, total, manifest, status } = published
  if (status !== "success") return published
  const { ctx, keys } = run
  const { spec } = ctx
  const cursor = cursorToStore(run, journal.runId, outcome)
  const where = manifest ? `${keys.manifest} and ${keys.success} written at ${ctx.sink.uri()}` : `its ${total.parts} file(s) written`
  yield* ctx.state
    .finishRun(
      journal.runId,
      { status: "success", finishedAt: ctx.now().toISOString(), ...total },
      { parts: outcome.unrecorded, ...cursor.compareAndSet, lease: run.lease.proof }
    )
    .pipe(
      Effect.mapError(
        (error) =>
          new StateError({
            message: `export '${spec.name}': run '${journal.runId}' is published (${where}) but its state was not updated: ${error.message}`,
            hint: `${cursor.ifUnrecorded ?? nextRunAfterUnrecorded(spec, prepared)}. ${error.hint ?? ""}`.trim(),
            retryable: true
          })
      )
    )
  yield* run.drift.baselineAfterSuccess
  return published
})

/**
 * Journals a run that failed or was interrupted before it was recorded, with how far it got; a failure to write that
 * is ignored (the run's own error is what is reported). A worker's failure is not its run's: the other workers go
 * on, and its unit went back to them.
 */
export const recordUnpublished = Effect.fn("Run.recordUnpublished")(function* (
  run: ExportRun,
  journal: RunJournal,
  cause: Cause.Cause<RivetError>
) {
  const { ctx } = run
  if (ctx.worker !== undefined) return
  const reached = yield* ctx.progress.snapshot
  const interrupted = Cause.isInterruptedOnly(cause)
  yield* ctx.state
    .finishRun(journal.runId, {
      status: interrupted ? "interrupted" : "failed",
      finishedAt: ctx.now().toISOString(),
      rows: reached.rows,
      parts: reached.parts,
      bytes: reached.bytes,
      error: Option.match(Cause.failureOption(cause), {
        onNone: () => (interrupted ? "interrupted" : describeCause(Cause.squash(cause))),
        onSome: (error) => error.message
      })
    })
    .pipe(Effect.ignore)
})
