import * as Effect from "effect/Effect"
import { cleanUpRunUploads } from "../upload-cleanup.js"
import type { ExportRun } from "./export-run.js"

/** Before the run reads anything: removes the temp files an interrupted earlier run left at the destination. */
export const sweepTempFiles = Effect.fn("Run.sweep")(function* ({ ctx }: ExportRun) {
  // Other workers' temp files are not leftovers.
  if (!ctx.sink.sweep || ctx.worker !== undefined) return
  const swept = yield* ctx.sink.sweep
  if (swept.length > 0) {
    yield* ctx.reporter.notice(ctx.spec.name, `removed ${swept.length} temp file(s) left by an interrupted earlier run`)
  }
})

/**
 * The end of every run, whatever its outcome: aborts the uploads still pending under the run's keys (see
 * cleanUpRunUploads). Never fails.
 */
export const cleanUpUploads = Effect.fn("Run.cleanUp")(function* ({ ctx, uploads }: ExportRun) {
  yield* cleanUpRunUploads(ctx.sink, uploads, ctx.retry, ctx.reporter, ctx.spec.name)
})
