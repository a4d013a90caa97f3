import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import { loadConfigFile, validateConfigValue } from "./registry/load-config.js"
import type { RivetConfig } from "./runtime/config/model.js"
import { didYouMean } from "./runtime/config/issues.js"
import { durationProblem, parseDuration } from "./runtime/duration.js"
import { ConfigError, type RivetError, type StateError } from "./runtime/errors.js"
import type { ExportResult } from "./runtime/pipeline.js"
import type { AnyPluginValue, RivetConfigInput } from "./config-input.js"
import type { AnyPlugin, BatchTransform } from "./runtime/plugin.js"
import { type ProgressReporter, silentProgress } from "./runtime/progress.js"
import { type ExportRun, runConfig } from "./runtime/run.js"
import type { StateStore } from "./state/store.js"

/** Options of {@link runExports}, {@link runExportsEffect} and {@link loadConfig}; `P`: the plugins passed in code. */
export interface RunExportsOptions {
  /** Directory that relative paths in the config resolve against (default: the current directory). */
  readonly configDir?: string
  /** Variables for `${VAR}` substitution and `*_env` keys (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /**
   * Plugins defined in code, in addition to the built-ins and the config's `plugins:`. Their config blocks become
   * part of the config's type (see `RivetConfigInput`).
   */
  readonly plugins?: ReadonlyArray<AnyPlugin>
  /** Run only these exports. */
  readonly only?: ReadonlyArray<string>
  /** Progress reporting (default: silent). */
  readonly progress?: Layer.Layer<ProgressReporter>
  /**
   * A step of your own between the source and the format, by export name: filter, map or enrich the batches
   * (`mapRows` builds one from a per-row function). The runtime keeps backpressure, scoping, retries, naming,
   * the manifest and `_SUCCESS` around it. A name that is not an export of the config is a `ConfigError`.
   */
  readonly transforms?: Readonly<Record<string, BatchTransform>>
  /** Continue unfinished checkpointed runs instead of refusing them (like `rivet run --resume`). */
  readonly resume?: boolean
  /**
   * How long each export waits for another run of it to finish (like `rivet run --wait`): a duration such as
   * `"30s"` or `"10m"`, or a number of seconds. Default: fail at once with a StateError naming the other run.
   */
  readonly wait?: string | number
  /**
   * Where state lives (default: `RIVET_STATE_URL` from `env`, else `.rivet_state.db` in `configDir`).
   * `sqliteStateLayer(":memory:")` keeps it in memory — incremental cursors are then forgotten after the run.
   */
  readonly state?: Layer.Layer<StateStore, StateError>
}

/**
 * A config given in code: shaped like the YAML file and typed from the same schemas (`RivetConfigInput`), or one
 * `loadConfig` already checked. `P`: the plugins passed in code.
 */
export type ConfigInput<P extends AnyPluginValue = never> = RivetConfigInput<P> | RivetConfig

/** The options, with the plugins passed in code typed as given (they type the config's blocks). */
type OptionsWith<P> = RunExportsOptions & { readonly plugins?: ReadonlyArray<P> }

const isLoaded = (input: object): input is RivetConfig =>
  "configDir" in input && typeof input.configDir === "string" && "origin" in input

/** Decodes a config object (or reads a YAML file when given a path) into a checked config. */
export const loadConfig = <const P extends AnyPluginValue = never>(
  input: ConfigInput<P> | string,
  options: OptionsWith<P> = {}
): Effect.Effect<RivetConfig, ConfigError> => {
  const loadOptions = { ...(options.env ? { env: options.env } : {}), ...(options.plugins ? { plugins: options.plugins } : {}) }
  if (typeof input === "string") return loadConfigFile(input, loadOptions)
  if (isLoaded(input)) return Effect.succeed(input)
  return Effect.flatMap(
    validateConfigValue(input, options.configDir ?? process.cwd(), "(inline config)", loadOptions),
    (result) => (Either.isRight(result) ? Effect.succeed(result.right) : Effect.fail(result.left[0]!))
  )
}

/**
 * Runs every export of a config and returns one outcome per export (failures included), as an Effect.
 * Fails only when the config itself is invalid.
 */
export const runExportsEffect = <const P extends AnyPluginValue = never>(
  input: ConfigInput<P> | string,
  options: OptionsWith<P> = {}
): Effect.Effect<ReadonlyArray<ExportRun>, RivetError> =>
  Effect.flatMap(Effect.zip(loadConfig(input, options), waitOf(options.wait)), ([config, waitMs]) =>
    Effect.zipRight(
      checkTransforms(config, options.transforms),
      runConfig(config, {
        waitMs,
        ...(options.only ? { only: options.only } : {}),
        ...(options.env ? { env: options.env } : {}),
        ...(options.transforms ? { transforms: options.transforms } : {}),
        ...(options.resume ? { resume: options.resume } : {}),
        ...(options.state ? { state: options.state } : {})
      })
    ).pipe(Effect.provide(options.progress ?? silentProgress))
  )

/** `options.wait` in milliseconds; 0 when absent. */
const waitOf = (wait: string | number | undefined): Effect.Effect<number, ConfigError> => {
  if (wait === undefined) return Effect.succeed(0)
  const ms = parseDuration(wait)
  return ms === undefined
    ? Effect.fail(new ConfigError({ path: "wait", message: durationProblem(wait), hint: "e.g. wait: \"10m\"" }))
    : Effect.succeed(ms)
}

/** A transform for an export the config does not have is a mistake (a typo would silently skip it). */
const checkTransforms = (
  config: RivetConfig,
  transforms: RunExportsOptions["transforms"]
): Effect.Effect<void, ConfigError> => {
  const known = config.exports.map((spec) => spec.name)
  const unknown = Object.keys(transforms ?? {}).find((name) => !known.includes(name))
  if (unknown === undefined) return Effect.void
  const suggestion = didYouMean(unknown, known)
  return Effect.fail(
    new ConfigError({
      path: `transforms.${unknown}`,
      message: `there is no export named '${unknown}' to transform`,
      hint: suggestion ? `did you mean '${suggestion}'?` : `exports: ${known.join(", ")}`
    })
  )
}

/**
 * Runs every export of a config (an object shaped like the YAML file, or a path to one) and resolves
 * with each export's result: parts, rows, manifest. Rejects with the first error (a tagged RivetError)
 * if the config is invalid or any export fails.
 *
 * @example
 * const [orders] = await runExports({
 *   source: { type: "postgres", url: process.env.DATABASE_URL },
 *   exports: [{ name: "orders", table: "orders", destination: { type: "local", path: "./out" } }]
 * })
 * console.log(orders.rows, orders.parts.map((p) => p.path))
 */
export const runExports = async <const P extends AnyPluginValue = never>(
  input: ConfigInput<P> | string,
  options: OptionsWith<P> = {}
): Promise<ReadonlyArray<ExportResult>> => {
  const exit = await Effect.runPromiseExit(
    Effect.flatMap(runExportsEffect(input, options), (runs) => {
      const failed = runs.find((run) => run._tag === "failure")
      return failed
        ? Effect.fail(failed.error)
        : Effect.succeed(runs.flatMap((run) => (run._tag === "success" ? [run.result] : [])))
    })
  )
  if (Exit.isSuccess(exit)) return exit.value
  throw Cause.squash(exit.cause)
}
