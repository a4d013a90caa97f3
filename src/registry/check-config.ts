import * as path from "node:path"
import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { missingEnvVariables, type MissingEnvVariable, unreadableSourceFiles } from "../config/env-keys.js"
import { maskKeyPaths, shortMaskKey } from "../config/masking.js"
import { lintConfig, type LintFinding } from "../config/lint.js"
import type { RivetConfig } from "../config/model.js"
import { interpolate, parseYaml } from "../config/yaml.js"
import { ConfigError } from "../core/errors.js"
import { type LoadOptions, pathSegments, validateConfigFile } from "./load-config.js"

/** What `rivet check` found in a config file. */
export interface CheckReport {
  /** Decoding problems, or lint findings of severity `error`; any of them means the config must not run. */
  readonly errors: ReadonlyArray<ConfigError>
  readonly warnings: ReadonlyArray<LintFinding>
  readonly notes: ReadonlyArray<LintFinding>
  /** Exports in the config (0 when it does not decode). */
  readonly exportCount: number
}

export interface CheckOptions extends LoadOptions {
  /**
   * A `*_env` key naming an unset variable is a warning instead of an error (`--allow-missing-env`): for linting,
   * in CI, configs whose secrets are only set where they run.
   */
  readonly allowMissingEnv?: boolean | undefined
}

/** The file parsed again (after decoding has reported its own problems): for line numbers and the `*_env` keys. */
const reparse = (file: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFileString(file)).pipe(
    Effect.flatMap((text) => parseYaml(text, file)),
    Effect.option
  )

const missingEnvMessage = (missing: MissingEnvVariable) =>
  `names the environment variable ${missing.variable}, which is ${missing.empty ? "empty" : "not set"}: rivet run would fail on it`

/**
 * Reads, decodes and lints a config file without connecting to anything: no source connection, no destination
 * call, no state. Reports every decoding problem at once, with every `*_env` key whose variable is unset; lints
 * and the config's notices (keys with no effect) come only from a config that decodes.
 */
export const checkConfigFile = (file: string, options: CheckOptions = {}): Effect.Effect<CheckReport, never, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const decoded = yield* validateConfigFile(file, options)
    const parsed = yield* reparse(file)
    const withLine = (configPath: string) => {
      const line = parsed._tag === "Some" ? parsed.value.lineOf(pathSegments(configPath)) : undefined
      return line === undefined ? configPath : `${configPath} (line ${line})`
    }
    const resolved =
      parsed._tag === "Some" ? yield* Effect.option(interpolate(parsed.value.value, options.env ?? process.env)) : undefined
    const decodeErrors = Either.isLeft(decoded) ? decoded.left : []
    // A key inside a block that decoding refused (an unknown `notifications:`) or whose value it refused (`url_env`
    // holding a URL) is reported once, by decoding.
    const refused = decodeErrors.map((error) => error.path.replace(/ \(line \d+\)$/, ""))
    const missing = (resolved?._tag === "Some" ? missingEnvVariables(resolved.value, options.env ?? process.env) : []).filter(
      (variable) => !refused.some((path) => variable.path === path || variable.path.startsWith(`${path}.`) || variable.path.startsWith(`${path}[`))
    )
    const envFindings = missing.map(
      (variable): LintFinding => ({
        severity: options.allowMissingEnv ? "warning" : "error",
        path: variable.path,
        message: missingEnvMessage(variable),
        hint: options.allowMissingEnv
          ? `set ${variable.variable} wherever the config runs`
          : `export ${variable.variable}=… before running; to lint a config whose secrets are only set where it runs (CI), use rivet check --allow-missing-env`
      })
    )
    const fileFindings = (resolved?._tag === "Some" ? unreadableSourceFiles(resolved.value, path.dirname(path.resolve(file))) : [])
      .filter((unreadable) => !refused.some((at) => unreadable.path === at || unreadable.path.startsWith(`${at}.`)))
      .map(
        (unreadable): LintFinding => ({
          severity: "error",
          path: unreadable.path,
          message: `the file ${unreadable.file} ${unreadable.reason}: rivet run would fail on it`,
          hint: "relative paths start at the config file's directory"
        })
      )
    const config = Either.isRight(decoded) ? decoded.right : undefined
    // A mask key that is set but too short would fail the run before it reads anything: say so now.
    const shortKeys = (config?.masking === undefined ? [] : maskKeyPaths(config.masking)).flatMap(({ variable, path }): ReadonlyArray<LintFinding> => {
      const value = (options.env ?? process.env)[variable]
      const short = value === undefined || value === "" ? undefined : shortMaskKey(variable, value)
      return short === undefined ? [] : [{ severity: "error", path, message: short, hint: "use a longer random secret (e.g. openssl rand -hex 32)" }]
    })
    const findings = [...envFindings, ...fileFindings, ...shortKeys, ...(config ? [...lintConfig(config), ...noticesOf(config)] : [])].map((finding) => ({
      ...finding,
      path: withLine(finding.path)
    }))
    const findingErrors = findings
      .filter((finding) => finding.severity === "error")
      .map((finding) => new ConfigError({ path: finding.path, message: finding.message, hint: finding.hint }))
    return {
      errors: [...decodeErrors, ...findingErrors],
      warnings: findings.filter((finding) => finding.severity === "warning"),
      notes: findings.filter((finding) => finding.severity === "note"),
      exportCount: config?.exports.length ?? 0
    }
  })

/**
 * The config's notices (the Rust rivet's scheduling keys, accepted without effect; its keys without an equivalent) in
 * config order, once each: a source-level one is on every export.
 */
const noticesOf = (config: RivetConfig): ReadonlyArray<LintFinding> => {
  const seen = new Set<string>()
  return config.exports.flatMap((spec) =>
    (spec.notices ?? []).flatMap((notice): ReadonlyArray<LintFinding> => {
      if (seen.has(notice.path)) return []
      seen.add(notice.path)
      return [{ severity: notice.severity ?? "note", path: notice.path, message: notice.message }]
    })
  )
}
