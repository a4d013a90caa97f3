import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { validateConfigFile } from "../../registry/load-config.js"
import { configIdentity, writePlanFile } from "../../engine/plan/file.js"
import { readOnlyStateLayerFor } from "../../state/layer.js"
import { planConfig } from "../../commands/plan/make.js"
import { configFailure, ExitCode, printErrors, worstExitCode } from "../exit.js"
import { renderPlannedExport } from "../plan-render.js"
import { paramOption, useParams } from "../params.js"
import { configOption } from "./run.js"

const exportOption = Options.text("export").pipe(
  Options.withAlias("e"),
  Options.repeated,
  Options.withDescription("Plan only this export (repeatable). Default: every export in the config.")
)

const jsonOption = Options.boolean("json").pipe(
  Options.withDescription("Print the plan as JSON on stdout (the same object -o writes), every statement included.")
)

const outputOption = Options.file("output").pipe(
  Options.withAlias("o"),
  Options.optional,
  Options.withDescription("Write the plan to this file, for `rivet run --plan` (valid 24 h, for this config file only).")
)

/** `rivet plan -c export.yaml [-e name]… [--json] [-o plan.json]` — what a run would do, without running it. */
export const planCommand = Command.make(
  "plan",
  { config: configOption, exports: exportOption, params: paramOption, json: jsonOption, output: outputOption },
  ({ config, exports, params, json, output }) =>
    Effect.gen(function* () {
      const badParams = yield* useParams(params, config, { json })
      if (badParams) return badParams
      const identity = yield* Effect.either(configIdentity(config))
      if (Either.isLeft(identity)) return yield* configFailure([identity.left])
      const loaded = yield* validateConfigFile(config)
      if (Either.isLeft(loaded)) return yield* configFailure(loaded.left)
      const planned = yield* Effect.either(planConfig(loaded.right, identity.right, {
          only: exports,
          state: readOnlyStateLayerFor({ configDir: loaded.right.configDir, env: process.env })
        }))
      if (Either.isLeft(planned)) {
        yield* printErrors([planned.left], { json })
        return new ExitCode(worstExitCode([planned.left]))
      }
      const { outcomes, file } = planned.right
      const errors = outcomes.flatMap((outcome) => (outcome._tag === "failure" ? [outcome.error] : []))
      if (json) {
        if (file) yield* Console.log(JSON.stringify(file, null, 2))
      } else {
        for (const outcome of outcomes) if (outcome._tag === "planned") yield* Console.log(renderPlannedExport(outcome.plan))
      }
      yield* printErrors(errors, { json })
      if (Option.isSome(output)) {
        if (file === undefined) {
          yield* Console.error(`Plan not written to ${output.value}: ${errors.length} export(s) could not be planned.`)
        } else {
          const written = yield* Effect.either(writePlanFile(output.value, file))
          if (Either.isLeft(written)) {
            errors.push(written.left)
            yield* printErrors([written.left], { json })
          } else if (!json) {
            yield* Console.log(`Plan written to ${output.value} (valid until ${file.expires_at}); run it with: rivet run -c ${config} --plan ${output.value}`)
          }
        }
      }
      return new ExitCode(worstExitCode(errors))
    })
).pipe(
  Command.withDescription(
    "Show what a run would do, without running it: per export the mode, the SQL statements (parameters inline), the cursor position, estimated rows (catalog statistics), chunk ranges, the destination and how parts will be named. Connects to the source read-only; writes nothing but the -o file. Credentials are never shown.\n\nExample:\n  rivet plan -c export.yaml\n  rivet plan -c export.yaml -e orders --json\n  rivet plan -c export.yaml -o plan.json && rivet run -c export.yaml --plan plan.json"
  )
)
