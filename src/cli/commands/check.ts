import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { checkConfigFile } from "../../registry/check-config.js"
import type { LintFinding } from "../../config/lint.js"
import { ExitCode, printErrors } from "../exit.js"
import { paramOption, useParams } from "../params.js"
import { printLines } from "../terminal.js"
import { configOption } from "./run.js"

const LABEL = { error: "Error", warning: "Warning", note: "Note" } as const

// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0008\u000b-\u001f\u007f]/g

/**
 * `Warning: <path>: message` (or `Note: …`), each followed by its `Hint:` line — once: the same advice for five
 * exports is printed after the first.
 */
export const renderFindings = (findings: ReadonlyArray<LintFinding>): string => {
  const hinted = new Set<string>()
  const lines = findings.flatMap((finding) => {
    const line = `${LABEL[finding.severity]}: ${finding.path}: ${finding.message}`
    if (!finding.hint || hinted.has(finding.hint)) return [line]
    hinted.add(finding.hint)
    return [line, `Hint: ${finding.hint}`]
  })
  return lines.map((line) => `${line.replace(CONTROL, "")}\n`).join("")
}

const allowMissingEnvOption = Options.boolean("allow-missing-env").pipe(
  Options.withDescription(
    "Report a *_env key (url_env, access_key_env, …) whose environment variable is unset as a warning, not an error: for linting configs in CI whose secrets are only set where they run."
  )
)

const plural = (count: number, word: string) => `${count} ${word}${count === 1 ? "" : "s"}`

/** `rivet check -c export.yaml` — decodes and lints a config without connecting to anything. */
export const checkCommand = Command.make(
  "check",
  { config: configOption, params: paramOption, allowMissingEnv: allowMissingEnvOption },
  ({ config, params, allowMissingEnv }) =>
    Effect.gen(function* () {
      const badParams = yield* useParams(params, config)
      if (badParams) return badParams
      const report = yield* checkConfigFile(config, { allowMissingEnv })
      yield* printErrors(report.errors)
      yield* printLines("stderr", renderFindings([...report.warnings, ...report.notes]))
      if (report.errors.length > 0) return new ExitCode(1)
      const counts = [
        report.warnings.length > 0 ? `, ${plural(report.warnings.length, "warning")}` : "",
        report.notes.length > 0 ? `, ${plural(report.notes.length, "note")}` : ""
      ].join("")
      yield* Console.log(`OK: ${config}: ${report.exportCount} export(s) valid${counts}`)
      return new ExitCode(0)
    })
).pipe(
  Command.withDescription(
    "Check a config without connecting to anything: every error at once (with its path), then warnings and notes about likely mistakes. A *_env key (url_env, access_key_env, …) naming an unset environment variable is an error, a warning with --allow-missing-env. Exit 1 on any error.\n\nExample:\n  rivet check -c examples/quickstart.yaml\n  rivet check -c export.yaml && rivet run -c export.yaml\n  rivet check -c export.yaml --allow-missing-env   # CI: secrets are set where it runs"
  )
)
