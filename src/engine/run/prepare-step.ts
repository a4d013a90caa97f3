import * as Effect from "effect/Effect"
import { prepareMode } from "../modes/prepare.js"
import { checkPlannedExport } from "../plan/verify.js"
import type { ExportRun } from "./export-run.js"

/**
 * Resolves the export's mode against the source (columns, keys, bounds, the stored cursor); a run given a plan
 * (`rivet run --plan`) is refused here when the config or the stored cursor moved since the plan was made.
 */
export const prepareRun = Effect.fn("Run.prepare")(function* ({ ctx, options }: ExportRun) {
  const prepared = yield* prepareMode(ctx)
  if (options.plan) yield* checkPlannedExport(ctx, prepared, options.plan)
  return prepared
})
