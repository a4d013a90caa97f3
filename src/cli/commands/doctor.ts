import * as Command from "@effect/cli/Command"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateConfigFile } from "../../registry/load-config.js"
import { type DoctorCheck, doctor } from "../../engine/doctor.js"
import { ExitCode, worstExitCode } from "../exit.js"
import { paramOption, useParams } from "../params.js"
import { configOption } from "./run.js"

const HINT_INDENT = "       "

/** `[OK]  <name>` (two spaces, no detail) or `[FAIL] <name>: <what happened>` + an indented `Hint:` line. */
export const renderCheck = (check: DoctorCheck): string => {
  if (!check.error) return `[OK]  ${check.name}`
  const where = check.error._tag === "ConfigError" ? `${check.error.path}: ` : ""
  const lines = [`[FAIL] ${check.name}: ${where}${check.error.message}`]
  if (check.error.hint) lines.push(`${HINT_INDENT}Hint: ${check.error.hint}`)
  return lines.join("\n")
}

/** `rivet doctor -c export.yaml` — checks the source, every export's query and every destination. */
export const doctorCommand = Command.make("doctor", { config: configOption, params: paramOption }, ({ config, params }) =>
  Effect.gen(function* () {
    const badParams = yield* useParams(params, config)
    if (badParams) return badParams
    yield* Console.log(`rivet doctor: checking config '${config}'\n`)
    const loaded = yield* validateConfigFile(config)
    if (Either.isLeft(loaded)) {
      for (const error of loaded.left) yield* Console.log(renderCheck({ name: "Config", error }))
      yield* Console.log("\nSome checks failed. Fix the issues above before running exports.")
      return new ExitCode(1)
    }
    yield* Console.log(renderCheck({ name: "Config parsed successfully" }))
    const checks = yield* doctor(loaded.right)
    for (const check of checks) yield* Console.log(renderCheck(check))
    const errors = checks.flatMap((check) => (check.error ? [check.error] : []))
    yield* Console.log(errors.length === 0 ? "\nAll checks passed." : "\nSome checks failed. Fix the issues above before running exports.")
    return new ExitCode(worstExitCode(errors))
  })
).pipe(
  Command.withDescription(
    "Check that the source answers, each query resolves and each destination is reachable and writable.\n\nExample:\n  rivet doctor -c export.yaml"
  )
)
