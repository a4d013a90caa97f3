import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { RivetConfig } from "../config/model.js"
import { PluginError, type RivetError } from "../core/errors.js"
import { guardedSink, guardedSource } from "./plugin-guard.js"
import { resolveSql } from "./modes/context.js"
import { type PluginContext, SinkDriver, SourceDriver } from "../core/plugin.js"

export interface DoctorCheck {
  /** `Source Postgres`, `Export orders`, `Destination S3(my-bucket)`. */
  readonly name: string
  readonly error?: RivetError | undefined
}

const context = (config: RivetConfig, exportName?: string): PluginContext => ({
  configDir: config.configDir,
  exportName,
  env: process.env
})

const attempt = (name: string, check: Effect.Effect<unknown, RivetError>): Effect.Effect<DoctorCheck> =>
  Effect.match(reportGuarded(check), { onSuccess: () => ({ name }), onFailure: (error) => ({ name, error }) })

/** A plugin that misbehaved (a guard's PluginError, see plugin-guard.ts) is a failed check, not a crash. */
const reportGuarded = <A>(effect: Effect.Effect<A, RivetError>): Effect.Effect<A, RivetError> =>
  Effect.catchAllDefect(effect, (defect) => (defect instanceof PluginError ? Effect.fail(defect) : Effect.die(defect)))

/**
 * Checks what a run needs before running it: the source answers, each export's query resolves
 * (and its column types can be exported), and each destination is reachable and writable.
 * Destinations shared by several exports are checked once.
 */
export const doctor = (config: RivetConfig): Effect.Effect<ReadonlyArray<DoctorCheck>> =>
  Effect.gen(function* () {
    const checks: Array<DoctorCheck> = []
    const sourceLayer = guardedSource({ kind: "source", type: config.source.plugin.type, exportName: undefined }, () =>
      config.source.make(context(config))
    )
    const sourceChecks = Effect.gen(function* () {
      const source = yield* SourceDriver
      const connected = yield* attempt(`Source ${source.label}`, source.check)
      checks.push(connected)
      if (connected.error) return
      for (const spec of config.exports) {
        const query = {
          exportName: spec.name,
          sql: resolveSql(spec),
          table: spec.table,
          batchSize: 1,
          columnTypes: spec.columnTypes
        }
        checks.push(yield* attempt(`Export ${spec.name}`, Effect.scoped(source.open(query))))
      }
    })
    const built = yield* Effect.either(reportGuarded(Effect.scoped(Effect.provide(sourceChecks, sourceLayer))))
    if (built._tag === "Left") checks.push({ name: `Source ${config.source.plugin.type}`, error: built.left })

    const seen = new Set<string>()
    for (const spec of config.exports) {
      const layer = guardedSink({ kind: "sink", type: spec.destination.plugin.type, exportName: spec.name }, () =>
        spec.destination.make(context(config, spec.name))
      )
      const check = Effect.gen(function* () {
        const sink = yield* SinkDriver
        const identity = `${sink.label} ${sink.uri()}`
        if (seen.has(identity)) return undefined
        seen.add(identity)
        return yield* attempt(`Destination ${sink.label}`, sink.check)
      })
      const result = yield* Effect.either(reportGuarded(Effect.scoped(Effect.provide(check, Layer.fresh(layer)))))
      if (result._tag === "Left") checks.push({ name: `Destination ${spec.destination.plugin.type}`, error: result.left })
      else if (result.right) checks.push(result.right)
    }
    return checks
  })
