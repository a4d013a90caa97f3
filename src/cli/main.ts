import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { completionsCommand } from "./commands/completions.js"
import { checkCommand } from "./commands/check.js"
import { doctorCommand } from "./commands/doctor.js"
import { initCommand } from "./commands/init.js"
import { metricsCommand } from "./commands/metrics.js"
import { planCommand } from "./commands/plan.js"
import { pluginCommand } from "./commands/plugin.js"
import { pluginsCommand } from "./commands/plugins.js"
import { runCommand } from "./commands/run.js"
import { schemaCommand } from "./commands/schema.js"
import { stateCommand } from "./commands/state.js"
import { validateCommand } from "./commands/validate.js"
import { ExitCode } from "./exit.js"
import { manifest } from "./manifest.js"
import { withPlainConsole } from "./plain-console.js"
import { interruptedExitCode, recordSignals } from "./signals.js"

// The pinned AWS SDK supports Node 20; its notice about *future* SDK releases is noise in every run's stderr.
process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] ??= "true"

const { version } = manifest

// The completions command describes the whole CLI, itself included, so it reads the root once it exists.
const root: { command?: Command.Command<string, unknown, unknown, unknown> } = {}
const rivet = Command.make("rivet").pipe(
  Command.withDescription("Export PostgreSQL tables to Parquet, CSV or NDJSON on local disk, stdout or S3."),
  Command.withSubcommands([runCommand, planCommand, checkCommand, schemaCommand, initCommand, doctorCommand, pluginsCommand, pluginCommand, stateCommand, metricsCommand, validateCommand, completionsCommand(() => root.command!)])
)
root.command = rivet as Command.Command<string, unknown, unknown, unknown>

const cli = Command.run(rivet, { name: "rivet", version })

const verbose = process.argv.includes("--verbose")

const program = withPlainConsole(Effect.suspend(() => cli(process.argv))).pipe(
  Effect.map((result: unknown) => (result instanceof ExitCode ? result.code : 0)),
  // @effect/cli has already printed usage errors; anything else is unexpected and reported briefly.
  Effect.catchAllCause((cause) => {
    const failure = Cause.failureOption(cause)
    const isUsage = failure._tag === "Some" && typeof failure.value === "object" && failure.value !== null && "_tag" in failure.value
    return Effect.as(
      !isUsage || verbose ? Console.error(`Error: ${verbose ? Cause.pretty(cause) : String(Cause.squash(cause))}`) : Effect.void,
      1
    )
  }),
  Effect.tap((code) => Effect.sync(() => (process.exitCode = code))),
  Effect.provide(NodeContext.layer)
)

recordSignals()
NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  // The default teardown exits 0 after a signal's interruption, which would tell cron the run succeeded.
  // Finalizers (cancelling statements, aborting uploads, stopping the embedded server) have run by then.
  teardown: (exit, onExit) =>
    onExit(Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? interruptedExitCode() : 1)
})
