import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateConfigFile } from "../../registry/load-config.js"
import { validateConfig } from "../../commands/validate/validate.js"
import { configFailure, ExitCode, printErrors, worstExitCode } from "../exit.js"
import { jsonReport, renderSummary, renderValidation, validationErrors } from "../validate-render.js"
import { paramOption, useParams } from "../params.js"
import { configOption, verboseOption } from "./run.js"

const exportOption = Options.text("export").pipe(
  Options.withAlias("e"),
  Options.repeated,
  Options.withDescription("Validate only this export (repeatable). Default: every export in the config.")
)

const runOption = Options.text("run").pipe(
  Options.repeated,
  Options.withDescription(
    "Re-read only the parts of this run (repeatable), e.g. orders_20250101T020000.123; the markers, the kept manifests and untracked objects are checked all the same. Default: every kept run."
  )
)

const strictOption = Options.boolean("strict").pipe(
  Options.withDescription(
    "Fail (exit 3) on warnings too: data objects the manifest does not list (e.g. parts of earlier runs) and what could not be verified."
  )
)

const jsonOption = Options.boolean("json").pipe(
  Options.withDescription("Print a JSON report on stdout: { ok, strict, exports: [{ export, status, findings, … }] }.")
)

/** `rivet validate -c export.yaml [-e name]… [--run id]… [--strict] [--json]` — checks what each export's destination holds. */
export const validateCommand = Command.make(
  "validate",
  {
    config: configOption,
    exports: exportOption,
    runs: runOption,
    params: paramOption,
    strict: strictOption,
    json: jsonOption,
    verbose: verboseOption
  },
  ({ config, exports, runs, params, strict, json }) =>
    Effect.gen(function* () {
      const badParams = yield* useParams(params, config)
      if (badParams) return badParams
      const loaded = yield* validateConfigFile(config)
      if (Either.isLeft(loaded)) return yield* configFailure(loaded.left)
      const results = yield* Effect.either(validateConfig(loaded.right, { only: exports, runs, strict }))
      if (Either.isLeft(results)) {
        yield* printErrors([results.left])
        return new ExitCode(worstExitCode([results.left]))
      }
      const errors = validationErrors(results.right)
      if (json) {
        yield* Console.log(JSON.stringify(jsonReport(results.right, strict), null, 2))
      } else {
        for (const result of results.right) {
          if (result._tag === "validated") yield* Console.log(renderValidation(result.validation).join("\n"))
        }
        yield* Console.log(renderSummary(results.right))
      }
      // Errors that stopped a check (unreachable destination, no permission) go to stderr; findings were printed.
      yield* printErrors(results.right.flatMap((result) => (result._tag === "error" ? [result.error] : [])))
      return new ExitCode(worstExitCode(errors))
    })
).pipe(
  Command.withDescription(
    "Check each export's destination against its manifests: _SUCCESS matches the latest manifest, which matches " +
      "its kept copy under _manifests/; every part of every kept run exists with its recorded size, sha256 (re-read) " +
      "and row count; and no data object is untracked. Exit 3 on any mismatch.\n\nExample:\n" +
      "  rivet validate -c export.yaml\n  rivet validate -c export.yaml -e orders --strict\n" +
      "  rivet validate -c export.yaml --run orders_20250101T020000.123\n  rivet validate -c export.yaml --json > report.json"
  )
)
