import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type { RivetError } from "../../core/errors.js"
import type { ExportProgress } from "../../core/progress.js"
import { withRetry } from "../../core/retry.js"
import { runUnit, type UnitContext, type UnitOutcome, type UnitWork } from "./run-unit.js"

/**
 * The export's progress as seen by one attempt of a unit: every change goes straight through (the progress line
 * stays live), and the rows, bytes and parts the attempt added are noted so that a failed attempt can take them back.
 * Retries of sink calls inside a failed attempt did happen: they stay counted.
 */
const attemptProgress = (parent: ExportProgress) => {
  const added = { rows: 0, bytes: 0, parts: 0 }
  const view = new Proxy(parent, {
    set: (target, key, value: number) => {
      if (key === "rows" || key === "bytes" || key === "parts") added[key] += value - target[key]
      return Reflect.set(target, key, value)
    }
  })
  const withdraw = () => {
    parent.rows -= added.rows
    parent.bytes -= added.bytes
    parent.parts -= added.parts
  }
  return { view, withdraw }
}

/**
 * Runs one attempt of a chunk or page. It counts into the export's progress as it goes and into quality gates of
 * its own; only a successful attempt keeps its counts and hands its gates to the export's. So a unit that is
 * retried (or that fails the run) adds its rows, bytes, parts and gate values once at most.
 */
export const runAttempt = (ctx: UnitContext, work: UnitWork): Effect.Effect<UnitOutcome, RivetError> =>
  Effect.suspend(() => {
    const { view, withdraw } = attemptProgress(ctx.progress)
    const gates = ctx.gates?.child()
    return runUnit({ ...ctx, progress: view, gates }, work).pipe(
      Effect.onExit((exit) =>
        Effect.sync(() => {
          if (Exit.isSuccess(exit)) {
            if (gates) ctx.gates?.adopt(gates)
          } else {
            withdraw()
          }
          gates?.close()
        })
      )
    )
  })

/**
 * Failures worth running a whole unit again: the source lost its connection or is restarting. A sink failure is
 * not: every sink call inside the unit was already retried with the same policy.
 */
export const isRetryableSourceError = (error: RivetError): boolean => error._tag === "SourceError" && error.retryable

/** Attempts a chunk or page gets: `chunk_max_attempts`, else the first and every retry of the retry policy. */
export const unitAttempts = (ctx: Pick<UnitContext, "spec" | "retry">): number => {
  const mode = ctx.spec.mode
  const configured = mode.kind === "chunked" || mode.kind === "keyset" ? mode.maxAttempts : undefined
  return configured ?? ctx.retry.maxRetries + 1
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
      ctx.progress.retries++
      return ctx.reporter.notice(
        ctx.spec.name,
        `${unit}: attempt ${failed} of ${attempts} failed, retrying: ${error.message}`
      )
    })
    return withRetry(counted, { ...ctx.retry, maxRetries: attempts - 1 }, () => {}, isRetryableSourceError)
  })
