import * as FileSystem from "@effect/platform/FileSystem"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { RivetConfig } from "../config/model.js"
import { validateConfigFile } from "../registry/load-config.js"
import { ConfigError, type RivetError } from "../core/errors.js"
import { stateLayerAt, stateLocationFor, type StateLocation } from "../state/layer.js"
import type { StateStore } from "../state/store.js"
import { ExitCode, printErrors, worstExitCode } from "./exit.js"
import { applyParams, printWarnings } from "./params.js"

/** What the commands reading the state (`rivet state …`, `rivet metrics`) share: the config's exports and their store. */

/** What every `rivet state` subcommand works on: the config's exports (or the one named) and where their state is. */
export interface StateScope {
  readonly config: string
  /** The config, decoded (`rivet state reset` drops a `mode: cdc` export's slot through its source). */
  readonly loaded: RivetConfig
  readonly exportNames: ReadonlyArray<string>
  readonly location: StateLocation
  /** False when the SQLite file does not exist yet: reading commands then print "nothing yet" without creating it. */
  readonly exists: boolean
}

const fileExists = (file: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.exists(file)).pipe(Effect.orElseSucceed(() => false))

export const scopeOf = (
  config: string,
  only: Option.Option<string>,
  params: ReadonlyArray<string>
): Effect.Effect<StateScope, ReadonlyArray<RivetError>, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const applied = yield* applyParams(params, config)
    if (applied.errors.length > 0) return yield* Effect.fail(applied.errors)
    yield* printWarnings(applied.warnings)
    const loaded = yield* validateConfigFile(config)
    if (Either.isLeft(loaded)) return yield* Effect.fail(loaded.left)
    const known = loaded.right.exports.map((spec) => spec.name)
    if (Option.isSome(only) && !known.includes(only.value)) {
      return yield* Effect.fail([
        new ConfigError({
          path: "--export",
          message: `no export named '${only.value}' in ${config}; its exports are: ${known.join(", ")}`,
          hint: "pass one of the names listed under `exports:` in the config"
        })
      ])
    }
    const location = yield* stateLocationFor({ configDir: loaded.right.configDir, env: process.env }).pipe(
      Effect.mapError((error) => [error])
    )
    const exists = location._tag === "postgres" || (yield* fileExists(location.path))
    return { config, loaded: loaded.right, exportNames: Option.isSome(only) ? [only.value] : known, location, exists }
  })

export const printJson = (value: unknown) => Console.log(JSON.stringify(value, null, 2))

/** Runs a subcommand: errors go to stderr with the usual exit code, the store is opened only when asked for. */
export const runState = <R>(body: Effect.Effect<void, RivetError | ReadonlyArray<RivetError>, R>) =>
  body.pipe(
    Effect.as(new ExitCode(0)),
    Effect.catchAll((failure) => {
      const errors = Array.isArray(failure) ? (failure as ReadonlyArray<RivetError>) : [failure as RivetError]
      return Effect.as(printErrors(errors), new ExitCode(worstExitCode(errors)))
    })
  )

export const withStore = <A, E>(scope: StateScope, use: Effect.Effect<A, E, StateStore>) =>
  Effect.provide(use, stateLayerAt(scope.location))

export const exportFilter = Options.text("export").pipe(
  Options.withAlias("e"),
  Options.optional,
  Options.withDescription("Only this export. Default: every export in the config.")
)
export const jsonOption = Options.boolean("json").pipe(Options.withDescription("Print JSON on stdout ([] when empty)."))

