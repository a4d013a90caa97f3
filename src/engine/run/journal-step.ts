import * as Effect from "effect/Effect"
import { openJournal } from "../modes/journal.js"
import type { PreparedMode } from "../modes/mode.js"
import { progressEstimate } from "../modes/planning.js"
import type { ExportRun } from "./export-run.js"

/**
 * Journals the run — a new one, or with `--resume` the unfinished run it continues — and names it in the lease. The
 * run's progress then gets its row estimate.
 */
export const journalRun = Effect.fn("Run.journal")(function* (run: ExportRun, prepared: PreparedMode) {
  const { ctx, lease, options } = run
  const journal = yield* openJournal(ctx, prepared, options.resume ?? false, lease.tookOver)
  // A resumed run holds the export's lease, so no live process writes under its part names: an upload open there
  // that this process did not begin is its killed earlier attempt's, aborted by the cleanup at the end.
  if (journal.resumed && ctx.worker === undefined && prepared.partStemOf) {
    run.uploads.notePrefix(prepared.partStemOf(journal.startedAt))
  }
  yield* lease.attach(journal.runId)
  yield* ctx.progress.setEstimate(yield* progressEstimate(prepared, options.plan))
  return journal
})
