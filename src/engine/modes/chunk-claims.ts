import * as Data from "effect/Data"
import * as Effect from "effect/Effect"
import type { RivetError, StateError } from "../../core/errors.js"
import type * as Scope from "effect/Scope"
import { type PartRecord, toPartRecord } from "../../core/manifest.js"
import type { UnitClaim, UnitRecord } from "../../state/store.js"
import type { WorkerJoin } from "../worker-join.js"
import type { ChunkRunner } from "./chunk-work.js"
import type { ExportContext } from "./context.js"
import type { RunJournal } from "./mode.js"
import type { UnitOutcome } from "./unit.js"

/**
 * How soon a claim loop asks again while every pending unit is claimed by a live worker (or the cap is reached):
 * doubling up to the maximum, so that many idle loops do not queue on the run's row lock.
 */
const BUSY_POLL_MS = 250
const BUSY_POLL_MAX_MS = 2_000
/** How often a worker whose units are all done asks whether the run got published. */
const PUBLISH_POLL_MS = 500

/** This worker's claim on a unit expired and another worker took the unit: its attempt's parts are dropped. */
export class LostClaim extends Data.TaggedError("LostClaim")<{ readonly index: number }> {}

export interface ClaimedRun {
  /** The units this worker committed, by index. */
  readonly finished: ReadonlyMap<number, UnitOutcome>
  /** Every part of the run (all workers'), in unit order — set only when this worker publishes. */
  readonly parts?: ReadonlyArray<PartRecord> | undefined
}

/**
 * A worker's share of a distributed chunked run: `parallel` loops, each claiming a pending unit (the state store
 * caps the run's live claims at `parallel` across every worker), running it with a heartbeat on its claim, and
 * committing it only while the claim is still this worker's. Once no unit is left, the worker whose publish lease
 * wins returns the run's parts to publish; the others wait until the run is published and return without parts.
 */
export const executeClaimed = (
  ctx: ExportContext,
  worker: WorkerJoin,
  journal: RunJournal,
  deps: {
    readonly parallel: number
    readonly runner: Effect.Effect<ChunkRunner, RivetError, Scope.Scope>
    readonly runChunk: (
      runner: ChunkRunner,
      unit: UnitRecord,
      commit: (outcome: UnitOutcome) => Effect.Effect<void, StateError | LostClaim>
    ) => Effect.Effect<UnitOutcome, RivetError | LostClaim>
  }
): Effect.Effect<ClaimedRun, RivetError> =>
  Effect.gen(function* () {
    const { state, progress, reporter, spec } = ctx
    const { claims, runId, ttlMs } = worker
    const units = yield* state.units(runId)
    yield* progress.setUnits({ done: units.filter((unit) => unit.status === "done").length, total: units.length, label: "chunks" })
    const finished = new Map<number, UnitOutcome>()

    const heartbeat = (held: UnitClaim) =>
      Effect.forever(
        Effect.zipRight(
          Effect.sleep(Math.max(1, Math.floor(ttlMs / 3))),
          // A renewal the store could not make (it already retried) is not a loss; only another holder is.
          Effect.flatMap(Effect.orElseSucceed(claims.renew(runId, held, ttlMs), () => true), (kept) =>
            kept ? Effect.void : Effect.fail(new LostClaim({ index: held.unit.index }))
          )
        )
      )

    const runClaimed = (runner: ChunkRunner, held: UnitClaim) =>
      deps
        .runChunk(runner, held.unit, (outcome) =>
          Effect.flatMap(claims.commit(runId, held, outcome.rows, outcome.parts), (committed) =>
            committed ? Effect.void : Effect.fail(new LostClaim({ index: held.unit.index }))
          )
        )
        .pipe(
          Effect.raceFirst(heartbeat(held)),
          Effect.tap((outcome) => Effect.zipRight(Effect.sync(() => finished.set(held.unit.index, outcome)), progress.unitDone)),
          Effect.asVoid,
          Effect.catchIf(
            (error): error is LostClaim => error instanceof LostClaim,
            (lost) =>
              reporter.notice(spec.name, `chunk ${lost.index}: this worker's claim expired and another worker redoes the chunk; the parts it wrote are listed by no manifest`)
          ),
          // A unit this worker gave up on goes back to the pool at once rather than when its claim expires.
          Effect.onError(() => Effect.ignore(claims.release(runId, held)))
        )

    const loop = (runner: ChunkRunner) =>
      Effect.gen(function* () {
        let waitMs = BUSY_POLL_MS
        for (;;) {
          const result = yield* claims.claim({ runId, worker: worker.id, ttlMs, cap: deps.parallel })
          if (result._tag === "AllDone") return
          if (result._tag === "Busy") {
            yield* Effect.sleep(waitMs * (0.75 + Math.random() / 2))
            waitMs = Math.min(waitMs * 2, BUSY_POLL_MAX_MS)
          } else {
            waitMs = BUSY_POLL_MS
            yield* runClaimed(runner, result.claim)
          }
        }
      })

    yield* Effect.scoped(
      Effect.gen(function* () {
        const runner = yield* deps.runner
        yield* Effect.all(Array.from({ length: deps.parallel }, () => loop(runner)), { concurrency: "unbounded", discard: true })
      })
    )

    const published = Effect.map(state.run(runId), (run) => run._tag === "Some" && run.value.status === "success")
    for (;;) {
      if (yield* published) return { finished }
      // Asked again once the lease is ours: the publisher may have finished and released it in between.
      if ((yield* worker.claimPublish) && !(yield* published)) break
      yield* Effect.sleep(PUBLISH_POLL_MS)
    }
    // Only parts of done units, each recorded by the one claim that committed it.
    const parts = (yield* state.parts(journal.runId)).map(toPartRecord)
    return { finished, parts }
  })
