import type * as FileSystem from "@effect/platform/FileSystem"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateConfig } from "../config/decode.js"
import { pathSegments } from "../config/issues.js"
import type { RivetConfig } from "../config/model.js"
import { readConfigBytes } from "../config/read-file.js"
import { type Translated, translateRustSpelling } from "../config/rust-spelling.js"
import { retypeVariables } from "../config/typed-variables.js"
import { interpolate, parseYaml } from "../config/yaml.js"
import { ConfigError } from "../core/errors.js"
import type { AnyPlugin } from "../core/plugin.js"
import { makeResolver } from "./resolver.js"
import type { ModeList } from "../config/mode.js"
import { MODES } from "../engine/modes/kinds/list.js"

export interface LoadOptions {
  readonly env?: Readonly<Record<string, string | undefined>>
  /** Plugins passed in code, in addition to the built-ins and the config's `plugins:`. */
  readonly plugins?: ReadonlyArray<AnyPlugin>
  /** The modes exports may name, instead of the built-in ones (a mode of your own: engine/modes/define.ts). */
  readonly modes?: ModeList
}

/** A decoded config with the notices of the Rust spelling rewritten on its exports, or its problems added. */
const withTranslation = (
  result: Either.Either<RivetConfig, ReadonlyArray<ConfigError>>,
  translated: Translated
): Either.Either<RivetConfig, ReadonlyArray<ConfigError>> => {
  if (Either.isLeft(result)) return translated.problems.length === 0 ? result : Either.left([...translated.problems, ...result.left])
  if (translated.problems.length > 0) return Either.left(translated.problems)
  if (translated.notices.size === 0) return result
  const exports = result.right.exports.map((spec, index) => {
    const added = translated.notices.get(index)
    return added === undefined ? spec : { ...spec, notices: [...added, ...(spec.notices ?? [])] }
  })
  return Either.right({ ...result.right, exports })
}

const pluginList = (value: unknown): ReadonlyArray<string> => {
  if (value === null || typeof value !== "object" || !("plugins" in value)) return []
  const list = value.plugins
  return Array.isArray(list) ? list.filter((item): item is string => typeof item === "string") : []
}

/**
 * Decodes a config value (already parsed, e.g. an object built in code): `${VAR}` substitution,
 * plugin loading, then every block decoded by its plugin. Returns all problems found.
 */
export const validateConfigValue = (
  value: unknown,
  configDir: string,
  origin: string,
  options: LoadOptions = {}
): Effect.Effect<Either.Either<RivetConfig, ReadonlyArray<ConfigError>>, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const resolved = yield* interpolate(value, options.env ?? process.env)
    const resolver = yield* makeResolver(pluginList(resolved), configDir, options.plugins)
    const modes = options.modes ?? MODES
    const decode = (input: unknown) =>
      Effect.gen(function* () {
        const translated = yield* translateRustSpelling(input, configDir)
        const result = yield* validateConfig({ value: translated.value, configDir, origin, plugins: resolver, modes })
        return withTranslation(result, translated)
      })
    const result = yield* decode(resolved)
    // `batch_size: ${N}`: a number or boolean that came from a variable is retyped, then decoded once more.
    const retyped = Either.isLeft(result) ? retypeVariables(value, resolved, result.left) : undefined
    return retyped === undefined ? result : yield* decode(retyped)
  }).pipe(Effect.catchAll((error) => Effect.succeed(Either.left([error]))))

const readConfigText = (file: string) =>
  readConfigBytes(file).pipe(
    // Decoding leniently would turn stray bytes into U+FFFD inside names and paths, far from their cause.
    Effect.flatMap((bytes) =>
      Effect.try({
        try: () => new TextDecoder("utf-8", { fatal: true }).decode(bytes),
        catch: () =>
          new ConfigError({
            path: file,
            message: "the config file is not valid UTF-8 text",
            hint: "save it as UTF-8 (e.g. iconv -f latin1 -t utf-8), or check that it is the right file"
          })
      })
    )
  )

/**
 * Only the `plugins:` list of a config file (with `${VAR}` substituted) and the directory it resolves against —
 * for `rivet plugins`, which must work on a config whose other parts are unfinished.
 */
export const readPluginSpecifiers = (
  file: string,
  options: Pick<LoadOptions, "env"> = {}
): Effect.Effect<{ readonly specifiers: ReadonlyArray<string>; readonly configDir: string }, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const parsed = yield* parseYaml(yield* readConfigText(file), file)
    const value = parsed.value
    const raw = value !== null && typeof value === "object" && "plugins" in value ? { plugins: value.plugins } : {}
    const specifiers = pluginList(yield* interpolate(raw, options.env ?? process.env))
    return { specifiers, configDir: path.dirname(path.resolve(file)) }
  })

/** Reads and validates a YAML config file, returning every problem found. */
export const validateConfigFile = (
  file: string,
  options: LoadOptions = {}
): Effect.Effect<Either.Either<RivetConfig, ReadonlyArray<ConfigError>>, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const parsed = yield* parseYaml(yield* readConfigText(file), file)
    const result = yield* validateConfigValue(parsed.value, path.dirname(path.resolve(file)), file, options)
    // A worker thread reads the file again with the built-in plugins and modes only.
    const reloadable = (options.plugins ?? []).length === 0 && options.modes === undefined
    return Either.mapBoth(result, {
      onRight: (config): RivetConfig => ({ ...config, reloadable }),
      onLeft: (errors) =>
        errors.map((error) => {
          const line = parsed.lineOf(pathSegments(error.path))
          return line === undefined
            ? error
            : new ConfigError({ path: `${error.path} (line ${line})`, message: error.message, hint: error.hint })
        })
    })
  }).pipe(Effect.catchAll((error) => Effect.succeed(Either.left([error]))))

/** Reads, validates and decodes a YAML config file, failing with the first problem. */
export const loadConfigFile = (
  file: string,
  options: LoadOptions = {}
): Effect.Effect<RivetConfig, ConfigError, FileSystem.FileSystem> =>
  Effect.flatMap(validateConfigFile(file, options), (result) =>
    Either.isRight(result) ? Effect.succeed(result.right) : Effect.fail(result.left[0]!)
  )

export { pathSegments }
