import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ExportConfig } from "../../config/model.js"
import { ProgressReporter } from "../../core/progress.js"
import { StateStore } from "../../state/store.js"
import { acquireLease, DEFAULT_LEASE_TTL_MS, type HeldLease } from "../lease.js"
import { joinAsWorker, type WorkerJoin } from "../worker-join.js"
import type { RunOptions } from "./run-options.js"

/** The lease a run holds and, for a worker of a distributed run, the run it joined. */
export interface TakenLease {
  readonly lease: HeldLease
  readonly worker?: WorkerJoin | undefined
}

/**
 * Takes the lease before anything reads the cursor, the destination or the source: one run per export at a time —
 * or, for a worker of a distributed run, the run's publish lease, taken once all its units are done. Held until the
 * run's scope closes.
 */
export const takeRunLease = Effect.fn("Run.lease")(function* (spec: ExportConfig, options: RunOptions) {
  const state = yield* StateStore
  if (options.worker) return (yield* joinAsWorker(spec, state, options.worker)) satisfies TakenLease
  const lease = yield* acquireLease(
    { exportName: spec.name, state, reporter: yield* ProgressReporter },
    options.lease ?? { ttlMs: DEFAULT_LEASE_TTL_MS, waitMs: 0 },
    { resume: options.resume ?? false }
  )
  return { lease, worker: undefined } satisfies TakenLease
})

/**
 * Runs `effect` only while the lease is held. A run whose lease was taken over stops where it is: its uploads are
 * aborted, nothing more is published. Any other failure of a run that has lost its lease (the new holder swept its
 * temp files) is reported as that loss.
 */
export const whileLeaseHeld = <A, E, R>(lease: HeldLease, effect: Effect.Effect<A, E, R>) =>
  Effect.raceFirst(effect, lease.lost).pipe(
    Effect.catchAll((error) => Effect.flatMap(lease.lostNow, (lost) => Effect.fail(Option.getOrElse(lost, () => error))))
  )
