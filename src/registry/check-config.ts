import * as fs from "node:fs/promises"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { lintConfig, type LintFinding } from "../runtime/config/lint.js"
import { parseYaml } from "../runtime/config/yaml.js"
import { ConfigError } from "../runtime/errors.js"
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

/** `exports[0].compression` → `exports[0].compression (line 12)`, as decoding errors are shown. */
const lineNumbers = (file: string) =>
  Effect.tryPromise(() => fs.readFile(file, "utf8")).pipe(
    Effect.flatMap((text) => parseYaml(text, file)),
    Effect.map((parsed) => (configPath: string) => {
      const line = parsed.lineOf(pathSegments(configPath))
      return line === undefined ? configPath : `${configPath} (line ${line})`
    }),
    Effect.orElseSucceed(() => (configPath: string) => configPath)
  )

/**
 * Reads, decodes and lints a config file without connecting to anything: no source connection, no destination
 * call, no state. Reports every decoding problem at once; lints run only on a config that decodes.
 */
export const checkConfigFile = (file: string, options: LoadOptions = {}): Effect.Effect<CheckReport> =>
  Effect.gen(function* () {
    const decoded = yield* validateConfigFile(file, options)
    if (Either.isLeft(decoded)) return { errors: decoded.left, warnings: [], notes: [], exportCount: 0 }
    const findings = lintConfig(decoded.right)
    const withLine = findings.length > 0 ? yield* lineNumbers(file) : (configPath: string) => configPath
    const located = findings.map((finding) => ({ ...finding, path: withLine(finding.path) }))
    return {
      errors: located
        .filter((finding) => finding.severity === "error")
        .map((finding) => new ConfigError({ path: finding.path, message: finding.message, hint: finding.hint })),
      warnings: located.filter((finding) => finding.severity === "warning"),
      notes: located.filter((finding) => finding.severity === "note"),
      exportCount: decoded.right.exports.length
    }
  })
