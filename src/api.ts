import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import type * as Layer from "effect/Layer"
import { loadConfigFile, validateConfigValue } from "./registry/load-config.js"
import type { RivetConfig } from "./runtime/config/model.js"
import type { ConfigError, RivetError } from "./runtime/errors.js"
import type { ExportResult } from "./runtime/pipeline.js"
import type { AnyPlugin } from "./runtime/plugin.js"
import { type ProgressReporter, silentProgress } from "./runtime/progress.js"
import { type ExportRun, runConfig } from "./runtime/run.js"

export interface RunExportsOptions {
  /** Directory that relative paths in the config resolve against (default: the current directory). */
  readonly configDir?: string
  /** Variables for `${VAR}` substitution and `*_env` keys (default: process.env). */
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Plugins defined in code, in addition to the built-ins and the config's `plugins:`. */
  readonly plugins?: ReadonlyArray<AnyPlugin>
  /** Run only these exports. */
  readonly only?: ReadonlyArray<string>
  /** Progress reporting (default: silent). */
  readonly progress?: Layer.Layer<ProgressReporter>
}

/** A config given in code: the same shape as the YAML file (`{ source, exports, plugins? }`). */
export type ConfigInput = Readonly<Record<string, unknown>>

/** Decodes a config object (or reads a YAML file when given a path) into a checked config. */
export const loadConfig = (
  input: ConfigInput | string,
  options: RunExportsOptions = {}
): Effect.Effect<RivetConfig, ConfigError> => {
  const loadOptions = { ...(options.env ? { env: options.env } : {}), ...(options.plugins ? { plugins: options.plugins } : {}) }
  if (typeof input === "string") return loadConfigFile(input, loadOptions)
  return Effect.flatMap(
    validateConfigValue(input, options.configDir ?? process.cwd(), "(inline config)", loadOptions),
    (result) => (Either.isRight(result) ? Effect.succeed(result.right) : Effect.fail(result.left[0]!))
  )
}

/**
 * Runs every export of a config and returns one outcome per export (failures included), as an Effect.
 * Fails only when the config itself is invalid.
 */
export const runExportsEffect = (
  input: ConfigInput | string,
  options: RunExportsOptions = {}
): Effect.Effect<ReadonlyArray<ExportRun>, RivetError> =>
  Effect.flatMap(loadConfig(input, options), (config) =>
    runConfig(config, {
      ...(options.only ? { only: options.only } : {}),
      ...(options.env ? { env: options.env } : {})
    }).pipe(Effect.provide(options.progress ?? silentProgress))
  )

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
export const runExports = async (
  input: ConfigInput | string,
  options: RunExportsOptions = {}
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
