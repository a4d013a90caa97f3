import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Ref from "effect/Ref"
import type { ExportProgress } from "../core/progress.js"
import { countCommitted, countRetry } from "./telemetry/metrics.js"
import { addStats, noStats, type UnitStats } from "./unit-stats.js"

/** The running totals of one attempt, as it goes. */
export interface AttemptMeter {
  /** Adds what the attempt just did to its own totals. */
  readonly count: (done: Partial<UnitStats>) => Effect.Effect<void>
  /** Replaces the totals with the ones an attempt running elsewhere (a lane's thread) reported. */
  readonly report: (totals: UnitStats) => Effect.Effect<void>
  readonly totals: Effect.Effect<UnitStats>
}

type Units = NonNullable<ExportProgress["units"]>

interface State {
  /** What successful attempts (and the export's own calls) did: only ever grows. */
  readonly committed: UnitStats
  /** The attempts running now, by id: their totals count live, and are dropped if they fail. */
  readonly running: ReadonlyMap<number, UnitStats>
  readonly nextId: number
  readonly estimatedRows?: number | undefined
  readonly units?: Units | undefined
}

/**
 * One export's live progress, built from values: each running attempt's totals plus what successful attempts
 * folded in. A failed attempt's rows, bytes and parts are never added, so nothing is ever taken back; the sink
 * retries it made did happen and stay counted.
 */
export interface LiveProgress {
  readonly snapshot: Effect.Effect<ExportProgress>
  /**
   * Runs one attempt with a meter of its own. When it succeeds, the stats it returns replace its running totals in
   * one step (the progress never dips); when it fails, only its retries are kept.
   */
  readonly attempt: <A extends { readonly stats: UnitStats }, E, R>(
    run: (meter: AttemptMeter) => Effect.Effect<A, E, R>
  ) => Effect.Effect<A, E, R>
  /** A retry of the export's own (a unit read again, a manifest write). */
  readonly retried: Effect.Effect<void>
  readonly setEstimate: (rows: number | undefined) => Effect.Effect<void>
  readonly setUnits: (units: Units) => Effect.Effect<void>
  readonly unitDone: Effect.Effect<void>
}

export const makeLiveProgress = (exportName: string, startedAt: number): Effect.Effect<LiveProgress> =>
  Effect.gen(function* () {
    const state = yield* Ref.make<State>({ committed: noStats, running: new Map(), nextId: 0 })
    const withRunning = (s: State, id: number, stats: UnitStats | undefined): State => {
      const running = new Map(s.running)
      if (stats === undefined) running.delete(id)
      else running.set(id, stats)
      return { ...s, running }
    }
    const meterOf = (id: number): AttemptMeter => ({
      count: (done) => Ref.update(state, (s) => withRunning(s, id, addStats(s.running.get(id) ?? noStats, done))),
      report: (totals) => Ref.update(state, (s) => withRunning(s, id, totals)),
      totals: Ref.get(state).pipe(Effect.map((s) => s.running.get(id) ?? noStats))
    })
    const attempt: LiveProgress["attempt"] = (run) =>
      Effect.acquireUseRelease(
        Ref.modify(state, (s) => [s.nextId, { ...withRunning(s, s.nextId, noStats), nextId: s.nextId + 1 }] as const),
        (id) => run(meterOf(id)),
        (id, exit) =>
          Ref.modify(state, (s) => {
            const kept = Exit.isSuccess(exit) ? exit.value.stats : { ...noStats, retries: s.running.get(id)?.retries ?? 0 }
            return [kept, { ...withRunning(s, id, undefined), committed: addStats(s.committed, kept) }] as const
          }).pipe(Effect.flatMap((kept) => countCommitted(exportName, kept)))
      )
    const snapshot = Effect.map(Ref.get(state), (s): ExportProgress => {
      let live = s.committed
      for (const stats of s.running.values()) live = addStats(live, stats)
      return { exportName, startedAt, ...live, estimatedRows: s.estimatedRows, ...(s.units ? { units: s.units } : {}) }
    })
    return {
      snapshot,
      attempt,
      retried: Effect.zipRight(
        Ref.update(state, (s) => ({ ...s, committed: addStats(s.committed, { retries: 1 }) })),
        countRetry(exportName)
      ),
      setEstimate: (rows) => Ref.update(state, (s) => ({ ...s, estimatedRows: rows })),
      setUnits: (units) => Ref.update(state, (s) => ({ ...s, units })),
      unitDone: Ref.update(state, (s) => (s.units ? { ...s, units: { ...s.units, done: s.units.done + 1 } } : s))
    }
  })
