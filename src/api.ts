import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Context from "effect/Context"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { loadConfigFile, validateConfigValue } from "./registry/load-config.js"
import type { RivetConfig } from "./config/model.js"
import { didYouMean } from "./core/did-you-mean.js"
import { durationProblem, parseDuration } from "./core/duration.js"
import { ConfigError, type PluginError, type RivetError, type SourceError, type StateError } from "./core/errors.js"
import type { ExportResult } from "./engine/pipeline.js"
import type { AnyPluginValue, RivetConfigInput } from "./config-input.js"
import type { Batch } from "./core/batch.js"
import type { AnyPlugin, BatchTransform, SourceResult } from "./core/plugin.js"
import { ProgressReporter, silentProgress } from "./core/progress.js"
import { type ExportRun, runConfig } from "./engine/run.js"
import { stateLayerFor } from "./state/layer.js"
import { LANES_WORKER_URL } from "./lanes-worker-url.js"
import { StateStore } from "./state/store.js"

/** Options of {@link runExports}, {@link runExportsEffect} and {@link loadConfig}; `P`: the plugins passed in code. */
export interface RunExportsOptions<E = never, R = never> {
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
  readonly transforms?: Readonly<Record<string, BatchTransform<E, R>>>
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
  /**
   * `false` encodes every part on the thread that reads the source (like `rivet run --no-encoder-thread`). By default
   * an export whose format declares it can encodes its parts on a thread of its own, when there is a core to spare.
   */
  readonly encoderThread?: boolean
}

/**
 * A config given in code: shaped like the YAML file and typed from the same schemas (`RivetConfigInput`), or one
 * `loadConfig` already checked. `P`: the plugins passed in code.
 */
export type ConfigInput<P extends AnyPluginValue = never> = RivetConfigInput<P> | RivetConfig

/** The options, with the plugins passed in code typed as given (they type the config's blocks). */
type OptionsWith<P, E = never, R = never> = RunExportsOptions<E, R> & { readonly plugins?: ReadonlyArray<P> }

const isLoaded = (input: object): input is RivetConfig =>
  "configDir" in input && typeof input.configDir === "string" && "origin" in input

/** Decodes a config object (or reads a YAML file when given a path) into a checked config. */
export const loadConfig = <const P extends AnyPluginValue = never>(
  input: ConfigInput<P> | string,
  options: Pick<RunExportsOptions, "configDir" | "env" | "plugins"> & { readonly plugins?: ReadonlyArray<P> } = {}
): Effect.Effect<RivetConfig, ConfigError> => {
  const loadOptions = { ...(options.env ? { env: options.env } : {}), ...(options.plugins ? { plugins: options.plugins } : {}) }
  if (typeof input === "string") return Effect.provide(loadConfigFile(input, loadOptions), NodeFileSystem.layer)
  if (isLoaded(input)) return Effect.succeed(input)
  return Effect.flatMap(
    Effect.provide(validateConfigValue(input, options.configDir ?? process.cwd(), "(inline config)", loadOptions), NodeFileSystem.layer),
    (result) => (Either.isRight(result) ? Effect.succeed(result.right) : Effect.fail(result.left[0]!))
  )
}

/**
 * Runs every export of a config and returns one outcome per export (failures included), as an Effect. It fails
 * (instead of returning outcomes) only when no export can start: the config is invalid (`ConfigError`), the source
 * cannot be reached (`SourceError`, or a `PluginError` from a source plugin that misbehaved) or the state cannot be
 * opened (`StateError`).
 *
 * Transforms may use services `R` and fail with errors `E` of the program: provide `R` to the returned Effect once.
 * A `ProgressReporter` or `StateStore` in the context is used when `options.progress` / `options.state` are not
 * given (so `Effect.provide(MyProgressLayer)` takes effect).
 */
export const runExportsEffect = <const P extends AnyPluginValue = never, E = never, R = never>(
  input: ConfigInput<P> | string,
  options: OptionsWith<P, E, R> = {}
): Effect.Effect<ReadonlyArray<ExportRun<E>>, ConfigError | SourceError | StateError | PluginError, R> =>
  Effect.gen(function* () {
    const context = yield* Effect.context<R>()
    const progress = options.progress ?? Option.match(yield* Effect.serviceOption(ProgressReporter), {
      onNone: () => silentProgress,
      onSome: (reporter) => Layer.succeed(ProgressReporter, reporter)
    })
    const state = options.state ?? Option.getOrUndefined(Option.map(yield* Effect.serviceOption(StateStore), (store) => Layer.succeed(StateStore, store)))
    const config = yield* loadConfig(input, options)
    const waitMs = yield* waitOf(options.wait)
    yield* checkTransforms(config, options.transforms)
    const runs = yield* runConfig(config, {
      waitMs,
      ...(options.only ? { only: options.only } : {}),
      ...(options.env ? { env: options.env } : {}),
      ...(options.transforms ? { transforms: withContext(options.transforms, context) } : {}),
      ...(options.resume ? { resume: options.resume } : {}),
      ...(options.encoderThread === false ? { encoderThread: false } : {}),
      state: state ?? stateLayerFor({ configDir: config.configDir, env: options.env ?? process.env }),
      lanesWorker: LANES_WORKER_URL
    }).pipe(Effect.provide(progress))
    return runs as ReadonlyArray<ExportRun<E>>
  }) as Effect.Effect<ReadonlyArray<ExportRun<E>>, ConfigError | SourceError | StateError | PluginError, R>

/**
 * The program's transforms with its context provided, as the engine runs them. The engine passes a transform's
 * errors through untouched (they are the export's failure), so widening `E` into its error channel is safe.
 */
const withContext = <E, R>(
  transforms: Readonly<Record<string, BatchTransform<E, R>>>,
  context: Context.Context<R>
): Readonly<Record<string, BatchTransform>> =>
  Object.fromEntries(
    Object.entries(transforms).map(([name, transform]) => [
      name,
      (input: SourceResult) => {
        const output = transform(input)
        return { schema: output.schema, batches: Stream.provideContext(output.batches, context) as Stream.Stream<Batch, RivetError> }
      }
    ])
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
  transforms: Readonly<Record<string, unknown>> | undefined
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
