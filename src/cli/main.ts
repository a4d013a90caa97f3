import * as Command from "@effect/cli/Command"
import * as NodeContext from "@effect/platform-node/NodeContext"
import * as NodeRuntime from "@effect/platform-node/NodeRuntime"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { createRequire } from "node:module"
import { doctorCommand } from "./commands/doctor.js"
import { runCommand } from "./commands/run.js"
import { ExitCode } from "./exit.js"

// The pinned AWS SDK supports Node 20; its notice about *future* SDK releases is noise in every run's stderr.
process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] ??= "true"

const { version } = createRequire(import.meta.url)("../../package.json") as { version: string }

const rivet = Command.make("rivet").pipe(
  Command.withDescription("Export PostgreSQL tables to Parquet, CSV or NDJSON on local disk, stdout or S3."),
  Command.withSubcommands([runCommand, doctorCommand])
)

const cli = Command.run(rivet, { name: "rivet", version })

const verbose = process.argv.includes("--verbose")

const program = Effect.suspend(() => cli(process.argv)).pipe(
  Effect.map((result: unknown) => (result instanceof ExitCode ? result.code : 0)),
  // @effect/cli has already printed usage errors; anything else is unexpected and reported briefly.
  Effect.catchAllCause((cause) =>
    Effect.sync(() => {
      const failure = Cause.failureOption(cause)
      const isUsage = failure._tag === "Some" && typeof failure.value === "object" && failure.value !== null && "_tag" in failure.value
      if (!isUsage || verbose) {
        process.stderr.write(`Error: ${verbose ? Cause.pretty(cause) : String(Cause.squash(cause))}\n`)
      }
      return 1
    })
  ),
  Effect.tap((code) => Effect.sync(() => (process.exitCode = code))),
  Effect.provide(NodeContext.layer)
)

NodeRuntime.runMain(program, {
  disableErrorReporting: true,
  // The default teardown exits 0 after a signal's interruption, which would tell cron the run succeeded.
  // Finalizers (aborting uploads, stopping the embedded server) have run by then.
  teardown: (exit, onExit) =>
    onExit(Exit.isSuccess(exit) ? 0 : Cause.isInterruptedOnly(exit.cause) ? 130 : 1)
})
