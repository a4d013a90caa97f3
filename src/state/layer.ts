import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as path from "node:path"
import { StateError } from "../core/errors.js"
import { hasPostgresScheme, maskUrl, urlProblem } from "../core/source/postgres-url.js"
import { postgresStateLayer } from "./postgres.js"
import { sqliteStateLayer } from "./sqlite.js"
import { STATE_FILE_NAME, type StateStore } from "./store.js"

/** The environment variable that moves the state from the SQLite file into PostgreSQL. */
export const STATE_URL_VARIABLE = "RIVET_STATE_URL"

export interface StateLayerOptions {
  /** Directory of the config file; the SQLite file lives here unless `path` says otherwise. */
  readonly configDir: string
  readonly env: Readonly<Record<string, string | undefined>>
  /** An explicit SQLite file (or `":memory:"`). */
  readonly path?: string | undefined
}

/** Where the state lives: a SQLite file or a PostgreSQL database. */
export type StateLocation =
  | { readonly _tag: "sqlite"; readonly path: string }
  | { readonly _tag: "postgres"; readonly url: string }

/** `RIVET_STATE_URL` when set (an empty value counts as unset), else the SQLite file beside the config. */
export const stateLocationFor = (options: StateLayerOptions): Effect.Effect<StateLocation, StateError> => {
  const url = options.env[STATE_URL_VARIABLE]?.trim()
  if (url === undefined || url === "") {
    return Effect.succeed({ _tag: "sqlite", path: options.path ?? path.join(options.configDir, STATE_FILE_NAME) })
  }
  if (!hasPostgresScheme(url)) {
    return Effect.fail(
      new StateError({
        message: `${STATE_URL_VARIABLE} must be a PostgreSQL URL starting with postgres:// or postgresql://`,
        hint: `e.g. ${STATE_URL_VARIABLE}=postgres://rivet:password@db:5432/rivet; unset it to keep the state in ${STATE_FILE_NAME} beside the config`
      })
    )
  }
  const problem = urlProblem(url)
  if (problem !== undefined) {
    return Effect.fail(new StateError({ message: `${STATE_URL_VARIABLE}: ${problem.message}`, hint: problem.hint }))
  }
  return Effect.succeed({ _tag: "postgres", url })
}

/** The location for messages: the file path, or the URL with its password masked. */
export const describeStateLocation = (location: StateLocation): string =>
  location._tag === "sqlite" ? location.path : maskUrl(location.url)

/** The state store at a location. */
export const stateLayerAt = (location: StateLocation): Layer.Layer<StateStore, StateError> =>
  location._tag === "sqlite" ? sqliteStateLayer(location.path) : postgresStateLayer(location.url)

/** The state store for a config: PostgreSQL when `RIVET_STATE_URL` is set, else SQLite beside the config. */
export const stateLayerFor = (options: StateLayerOptions): Layer.Layer<StateStore, StateError> =>
  Layer.unwrapEffect(Effect.map(stateLocationFor(options), stateLayerAt))

/**
 * The state for a command that only reads it (`rivet plan`): a SQLite file that does not exist yet is not created
 * (an empty store in memory stands in: no cursor, no runs).
 */
export const readOnlyStateLayerFor = (
  options: StateLayerOptions
): Layer.Layer<StateStore, StateError, FileSystem.FileSystem> =>
  Layer.unwrapEffect(
    Effect.gen(function* () {
      const location = yield* stateLocationFor(options)
      if (location._tag !== "sqlite") return stateLayerAt(location)
      const fs = yield* FileSystem.FileSystem
      const exists = yield* Effect.orElseSucceed(fs.exists(location.path), () => false)
      return exists ? stateLayerAt(location) : sqliteStateLayer(":memory:")
    })
  )
