import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateConfigFile } from "../../registry/load-config.js"
import { runConfig } from "../../runtime/run.js"
import { configFailure, ExitCode, printErrors, worstExitCode } from "../exit.js"
import { cliProgress } from "../progress.js"

export const configOption = Options.file("config", { exists: "either" }).pipe(
  Options.withAlias("c"),
  Options.withDescription("Path to the YAML config file.")
)

export const exportOption = Options.text("export").pipe(
  Options.withAlias("e"),
  Options.repeated,
  Options.withDescription("Run only this export (repeatable). Default: every export in the config.")
)

export const verboseOption = Options.boolean("verbose").pipe(
  Options.withDescription("Show error details (causes, stack traces) for bug reports.")
)

/** `rivet run -c export.yaml [-e name]…` — runs the exports and prints a summary per export. */
export const runCommand = Command.make(
  "run",
  { config: configOption, exports: exportOption, verbose: verboseOption },
  ({ config, exports }) =>
    Effect.gen(function* () {
      const loaded = yield* validateConfigFile(config)
      if (Either.isLeft(loaded)) return yield* configFailure(loaded.left)
      const runs = yield* runConfig(loaded.right, { only: exports }).pipe(
        Effect.provide(cliProgress()),
        Effect.either
      )
      if (Either.isLeft(runs)) {
        yield* printErrors([runs.left])
        return new ExitCode(worstExitCode([runs.left]))
      }
      const errors = runs.right.flatMap((run) => (run._tag === "failure" ? [run.error] : []))
      yield* printErrors(errors)
      return new ExitCode(worstExitCode(errors))
    })
).pipe(
  Command.withDescription(
    "Export tables to files.\n\nExample:\n  rivet run -c examples/quickstart.yaml\n  rivet run -c export.yaml -e orders -e customers"
  )
)
