import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ExportConfig, RivetConfig } from "./config/model.js"
import { ConfigError, describeCause, PluginError, type RivetError } from "./errors.js"
import { type FormatDriver, type PluginContext, type SinkDriver, SourceDriver } from "./plugin.js"
import { type ExportResult, runExport, type RunOptions } from "./pipeline.js"
import { ProgressReporter } from "./progress.js"
import type { RetryPolicy } from "./retry.js"

export interface RunConfigOptions {
  /** Run only these exports (by name), in config order. */
  readonly only?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string | undefined>>
  readonly retry?: RetryPolicy
  readonly now?: () => Date
}

export type ExportRun =
  | { readonly _tag: "success"; readonly result: ExportResult }
  | { readonly _tag: "failure"; readonly exportName: string; readonly error: RivetError }

const pluginContext = (config: RivetConfig, env: RunConfigOptions["env"], exportName?: string): PluginContext => ({
  configDir: config.configDir,
  exportName,
  env: env ?? process.env
})

/** Picks the exports to run; an unknown name is a usage error listing the known ones. */
export const selectExports = (
  config: RivetConfig,
  only: ReadonlyArray<string> | undefined
): Effect.Effect<ReadonlyArray<ExportConfig>, ConfigError> => {
  if (!only || only.length === 0) return Effect.succeed(config.exports)
  const known = config.exports.map((spec) => spec.name)
  const unknown = only.find((name) => !known.includes(name))
  if (unknown !== undefined) {
    return Effect.fail(
      new ConfigError({
        path: "--export",
        message: `export '${unknown}' is not defined in ${config.origin}`,
        hint: `known exports: ${known.join(", ")}`
      })
    )
  }
  return Effect.succeed(config.exports.filter((spec) => only.includes(spec.name)))
}

const exportLayer = (config: RivetConfig, spec: ExportConfig, env: RunConfigOptions["env"]) => {
  const context = pluginContext(config, env, spec.name)
  return Layer.merge(
    spec.format.plugin.make(spec.format.config as never, context),
    spec.destination.plugin.make(spec.destination.config as never, context)
  ) as Layer.Layer<FormatDriver | SinkDriver, RivetError>
}

/**
 * Runs the selected exports one after another with one shared source connection. A failing export
 * does not stop the others; each outcome is returned (and reported through the ProgressReporter).
 */
export const runConfig = Effect.fn("Rivet.runConfig")(function* (config: RivetConfig, options: RunConfigOptions = {}) {
  const selected = yield* selectExports(config, options.only)
  const reporter = yield* ProgressReporter
  const sourceLayer = config.source.plugin.make(config.source.config as never, pluginContext(config, options.env)) as Layer.Layer<
    SourceDriver,
    RivetError
  >
  // Without a source no export can run: fail once instead of once per export.
  const sourceContext = yield* Layer.build(sourceLayer)
  yield* Effect.flatMap(SourceDriver, (source) => source.check).pipe(Effect.provide(sourceContext))
  const runOptions: RunOptions = {
    sourceType: config.source.plugin.type,
    ...(options.retry ? { retry: options.retry } : {}),
    ...(options.now ? { now: options.now } : {})
  }
  const runs: Array<ExportRun> = []
  for (const spec of selected) {
    const started = Date.now()
    const exit = yield* runExport(spec, runOptions).pipe(
      Effect.provide(exportLayer(config, spec, options.env)),
      Effect.provide(sourceContext),
      Effect.exit
    )
    if (Exit.isSuccess(exit)) {
      const result = exit.value
      runs.push({ _tag: "success", result })
      yield* reporter.finished({
        exportName: spec.name,
        runId: result.runId,
        status: "success",
        rows: result.rows,
        files: result.parts.length,
        bytes: result.bytes,
        retries: result.retries,
        durationMs: result.durationMs,
        uri: result.uri
      })
      continue
    }
    // Only a pure interruption (Ctrl-C) stops the run: a failed layer build also carries the interruption of its
    // sibling layer's fiber, and must be reported as this export's error.
    if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
    const error = errorOf(exit.cause, spec)
    runs.push({ _tag: "failure", exportName: spec.name, error })
    yield* reporter.finished({
      exportName: spec.name,
      runId: "",
      status: "failed",
      rows: 0,
      files: 0,
      bytes: 0,
      retries: 0,
      durationMs: Date.now() - started,
      uri: "",
      error: error.message
    })
  }
  return runs
}, Effect.scoped)

/** The tagged error of a failed export; an unexpected defect (a plugin that threw) becomes a PluginError. */
const errorOf = (cause: Cause.Cause<RivetError>, spec: ExportConfig): RivetError => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return failure.value
  const defect = Cause.squash(cause)
  return new PluginError({
    plugin: `${spec.format.plugin.type}/${spec.destination.plugin.type}`,
    message: `export '${spec.name}' failed unexpectedly: ${describeCause(defect)}`,
    hint: "this is a bug in a plugin or in Rivet; run with --verbose for details"
  })
}
