import * as Options from "@effect/cli/Options"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { ConfigError } from "../core/errors.js"
import { ExitCode, printErrors } from "./exit.js"
import { event } from "./progress.js"

const NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

export const paramOption = Options.text("param").pipe(
  Options.withAlias("p"),
  Options.repeated,
  Options.withDescription(
    "NAME=value (repeatable): sets the variable NAME for this run, as if it were in the environment, winning over an exported NAME. Fills ${NAME} in the config."
  )
)

const parse = (param: string): { readonly name: string; readonly value: string } | ConfigError => {
  const equals = param.indexOf("=")
  const name = equals < 0 ? param : param.slice(0, equals)
  if (equals < 0 || !NAME.test(name)) {
    // Only the name part is echoed: the value may be a secret.
    return new ConfigError({
      path: "--param",
      message: equals < 0 ? `'${name.slice(0, 64)}' has no '=value'` : `'${name.slice(0, 64)}' is not a variable name`,
      hint: "write --param NAME=value, NAME made of letters, digits and underscores (e.g. -p RUN_DATE=2026-12-01)"
    })
  }
  return { name, value: param.slice(equals + 1) }
}

/**
 * Applies `--param NAME=value` to this process's environment (the CLI is one run: the config's `${NAME}`, `url_env`,
 * worker threads and plugins then all see the same value). Returns the malformed ones as errors, and a warning for
 * each name the config file never references as `${NAME}` or by name.
 */
export const applyParams = (
  params: ReadonlyArray<string>,
  configFile: string
): Effect.Effect<
  { readonly errors: ReadonlyArray<ConfigError>; readonly warnings: ReadonlyArray<string> },
  never,
  FileSystem.FileSystem
> =>
  Effect.gen(function* () {
    const parsed = params.map(parse)
    const errors = parsed.filter((param) => param instanceof ConfigError)
    const valid = parsed.filter((param): param is { readonly name: string; readonly value: string } => !(param instanceof ConfigError))
    if (errors.length > 0 || valid.length === 0) return { errors, warnings: [] }
    // An unreadable config is reported by the command that loads it.
    const text = yield* Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(configFile)).pipe(Effect.orElseSucceed(() => ""))
    const warnings: Array<string> = []
    for (const { name, value } of valid) {
      process.env[name] = value
      if (text !== "" && !new RegExp(`\\b${name}\\b`).test(text)) {
        warnings.push(`--param '${name}' is not referenced in ${configFile} (no \${${name}} in it)`)
      }
    }
    return { errors: [], warnings }
  })

/**
 * The commands' first step: applies `--param`s, prints the warnings (a JSON `warning` event with `--json`), and
 * returns exit code 1 after printing the errors when one is malformed.
 */
export const useParams = (params: ReadonlyArray<string>, configFile: string, options: { readonly json?: boolean } = {}) =>
  Effect.gen(function* () {
    const { errors, warnings } = yield* applyParams(params, configFile)
    if (errors.length > 0) {
      yield* printErrors(errors, options)
      return new ExitCode(1)
    }
    yield* printWarnings(warnings, options)
    return undefined
  })

export const printWarnings = (warnings: ReadonlyArray<string>, options: { readonly json?: boolean } = {}) =>
  Effect.forEach(
    warnings,
    (message) =>
      options.json ? event("warning", { message }) : Console.error(`rivet: warning: ${message}`),
    { discard: true }
  )
