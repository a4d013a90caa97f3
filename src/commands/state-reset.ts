import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { RivetConfig } from "../config/model.js"
import { PluginError, type RivetError, SourceError } from "../core/errors.js"
import { SourceDriver } from "../core/plugin.js"
import { runnable } from "../engine/modes/define.js"
import { guardedSource } from "../engine/plugin-guard.js"
import { pluginContext } from "./doctor.js"

/** What the state store's reset did: the cursor cleared or not, unfinished checkpointed runs abandoned. */
export interface StateCleared {
  readonly cursor: boolean
  readonly abandonedRuns: number
}

export interface ResetOutcome extends StateCleared {
  /**
   * `mode: cdc`: the export's replication slot, dropped on the source; undefined when it had none (or its mode reads
   * no change log). `snapshot`: the next run starts with the table's snapshot (`initial: snapshot`).
   */
  readonly droppedSlot?: { readonly name: string; readonly snapshot: boolean } | undefined
  /** The other exports reading the slot with this one, reset with it (a slot's readers start again together). */
  readonly together?: ReadonlyArray<{ readonly exportName: string } & StateCleared> | undefined
}

/** A plugin that misbehaved (the guard's PluginError) fails the reset like any error, rather than crashing it. */
const reported = <A, E, R>(effect: Effect.Effect<A, E, R>): Effect.Effect<A, E | PluginError, R> =>
  Effect.catchAllDefect(effect, (defect) => (defect instanceof PluginError ? Effect.fail(defect) : Effect.die(defect)))

/**
 * `rivet state reset -e <export>`: forgets what the state holds for the export (`clearState`: the store's reset,
 * which refuses while a run holds the export's lease) and, for an export that reads the source's change log
 * (`mode: cdc`), drops its slot on the source, which would otherwise keep WAL for a position nothing reads any more.
 *
 * Order: the source is reached first, so an unreachable source fails the reset with nothing reset; then the state
 * (the lease check lives there: a running export keeps both its state and its slot); then the slot. A slot that
 * fails to drop after the state was reset is an error saying so: running the reset again drops it. The other
 * exports reading the same slot (`sharedRead`) are reset with it: without the slot, none of them could go on.
 */
export const resetExport = <R>(
  config: RivetConfig,
  exportName: string,
  clearStateOf: (exportName: string) => Effect.Effect<StateCleared, RivetError, R>
): Effect.Effect<ResetOutcome, RivetError, R> => {
  const spec = config.exports.find((candidate) => candidate.name === exportName)
  const changeLog = spec === undefined ? undefined : runnable(spec.mode).changeLog
  if (spec === undefined || changeLog === undefined) return clearStateOf(exportName)
  const resource = spec.mode.sharedRead(spec.name, spec.table)?.resource
  const others = config.exports.filter(
    (other) => other.name !== exportName && resource !== undefined && other.mode.sharedRead(other.name, other.table)?.resource === resource
  )
  const clearState = Effect.gen(function* () {
    const cleared = yield* clearStateOf(exportName)
    if (others.length === 0) return cleared
    const together = yield* Effect.forEach(others, (other) => Effect.map(clearStateOf(other.name), (result) => ({ exportName: other.name, ...result })))
    return { ...cleared, together }
  })
  const request = changeLog(spec)
  const sourceLayer = guardedSource({ kind: "source", type: config.source.plugin.type, exportName }, () =>
    config.source.make(pluginContext(config))
  )
  const unreachable = (error: RivetError) =>
    new SourceError({
      source: config.source.plugin.type,
      message:
        `cannot reach the source to drop replication slot ${request.slot} of export '${exportName}' (mode: cdc): ${error.message}; ` +
        "nothing was reset",
      hint:
        "the stored position and the slot are reset together: run the reset again once the source answers (`rivet doctor " +
        "-c <config>` checks it); forgetting the position alone would leave the slot holding WAL on the server",
      retryable: error._tag === "SourceError" ? error.retryable : false
    })
  const reset = Effect.gen(function* () {
    const source = yield* SourceDriver
    const changes = source.changes
    // A source without a change log never made a slot: nothing to drop (the run refuses the mode).
    if (changes === undefined) return yield* clearState
    yield* Effect.mapError(reported(source.check), unreachable)
    const cleared = yield* clearState
    const dropped = yield* reported(changes.drop(request)).pipe(
      Effect.mapError(
        (error) =>
          new SourceError({
            source: source.label,
            message: `the state of export '${exportName}' was reset, but its replication slot ${request.slot} could not be dropped: ${error.message}`,
            hint:
              `run \`rivet state reset -c <config> -e ${exportName}\` again once the source answers, or drop the slot on the server: ` +
              `SELECT pg_drop_replication_slot('${request.slot}')`,
            retryable: error._tag === "SourceError" ? error.retryable : false
          })
      )
    )
    return { ...cleared, droppedSlot: dropped ? { name: request.slot, snapshot: request.snapshot } : undefined }
  })
  // The source layer itself failing (its URL variable unset, a plugin that cannot start) is unreachable too.
  return Effect.scoped(
    Effect.gen(function* () {
      const context = yield* Effect.mapError(reported(Layer.build(sourceLayer)), unreachable)
      return yield* Effect.provide(reported(reset), context)
    })
  )
}
