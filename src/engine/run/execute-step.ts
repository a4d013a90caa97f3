import * as Effect from "effect/Effect"
import type { PreparedMode, RunJournal } from "../modes/mode.js"
import type { ExportRun } from "./export-run.js"

/**
 * Runs the mode's units while the reporter shows the progress: `started`, then a tick every `intervalMs` until the
 * run's scope closes, and one last tick once every unit is done.
 */
export const executeMode = Effect.fn("Run.execute")(function* (run: ExportRun, prepared: PreparedMode, journal: RunJournal) {
  const { progress, reporter, worker } = run.ctx
  yield* Effect.flatMap(progress.snapshot, reporter.started)
  // A slow reporter delays its own next tick, never the export.
  yield* Effect.forkScoped(
    Effect.forever(Effect.zipRight(Effect.sleep(reporter.intervalMs), Effect.flatMap(progress.snapshot, reporter.tick)))
  )
  const outcome = yield* prepared.execute(journal, run.options.plan)
  // Every unit is done: one last tick shows where the export ended, whatever the interval.
  yield* Effect.flatMap(progress.snapshot, reporter.tick)
  // The worker that publishes a distributed run does so once every unit is done: an upload still open under the
  // run's part names was begun by a worker that died (its claim was taken over), so the cleanup aborts it.
  if (worker !== undefined && !outcome.publishedElsewhere && outcome.partStem) run.uploads.notePrefix(outcome.partStem)
  return outcome
})
