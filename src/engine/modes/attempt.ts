import * as Effect from "effect/Effect"
import type { RivetError } from "../../core/errors.js"
import { withRetry } from "../../core/retry.js"
import { recordUnit } from "../telemetry/metrics.js"
import { runUnit } from "./run-unit.js"
import type { UnitOutcome, UnitWork } from "./unit.js"
import type { UnitContext } from "./unit-context.js"

/**
 * Runs one attempt of a unit with a progress meter and quality gates of its own. The attempt returns what it did as
 * values (its outcome, stats and timings); only a successful attempt's stats join the export's progress and its gate
 * values the export's gates, so a unit that is retried (or that fails the run) counts once at most.
 */
export const runAttempt = (ctx: UnitContext, work: UnitWork): Effect.Effect<UnitOutcome, RivetError> =>
  ctx.progress.attempt((meter) =>
    Effect.acquireUseRelease(
      Effect.sync(() => ctx.gates?.child()),
      (gates) =>
        runUnit({ ...ctx, gates }, meter, work).pipe(
          Effect.tap((outcome) =>
            Effect.zipRight(
              Effect.sync(() => gates && ctx.gates?.fold(gates.tally())),
              recordUnit({ exportName: ctx.spec.name, unit: work.unit.kind, lane: ctx.lane ?? "main" }, outcome.timings)
            )
          )
        ),
      (gates) => Effect.sync(() => gates?.close())
    )
  )

/**
 * Failures worth running a whole unit again: the source lost its connection or is restarting. A sink failure is
 * not: every sink call inside the unit was already retried with the same policy.
 */
export const isRetryableSourceError = (error: RivetError): boolean => error._tag === "SourceError" && error.retryable

/** Attempts a chunk or page gets: `chunk_max_attempts`, else the first and every retry of the retry policy. */
export const unitAttempts = (ctx: Pick<UnitContext, "spec" | "retry">): number => {
  return ctx.spec.mode.maxAttempts ?? ctx.retry.maxRetries + 1
}

/**
 * Runs a chunk or page again (the same range or start key, the same part names) when it fails with a retryable
 * source error, with the export's retry policy's delays, up to `unitAttempts` attempts in all. Each retry is
 * counted in `progress.retries` and announced with a notice; permanent errors, and the failure of the last
 * attempt, fail at once.
 */
export const retryUnit = <A>(
  ctx: Pick<UnitContext, "spec" | "progress" | "retry" | "reporter">,
  unit: string,
  attempt: Effect.Effect<A, RivetError>
): Effect.Effect<A, RivetError> =>
  Effect.suspend(() => {
    const attempts = unitAttempts(ctx)
    let failed = 0
    const counted = Effect.tapError(attempt, (error) => {
      if (!isRetryableSourceError(error) || ++failed >= attempts) return Effect.void
      return Effect.zipRight(
        ctx.progress.retried,
        ctx.reporter.notice(ctx.spec.name, `${unit}: attempt ${failed} of ${attempts} failed, retrying: ${error.message}`)
      )
    })
    return withRetry(counted, { ...ctx.retry, maxRetries: attempts - 1 }, () => {}, isRetryableSourceError)
  })
