import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { validateConfigFile } from "../../registry/load-config.js"
import { durationProblem, parseDuration } from "../../core/duration.js"
import { ConfigError } from "../../core/errors.js"
import { loadPlanFor } from "../../engine/plan/file.js"
import { runConfig } from "../../engine/run.js"
import { checkRunId, RUN_ID_VARIABLE } from "../../engine/worker-join.js"
import { telemetryLayer } from "../../engine/telemetry/layer.js"
import { stateLayerFor } from "../../state/layer.js"
import { LANES_WORKER_URL } from "../../lanes-worker-url.js"
import { configFailure, ExitCode, printErrors, worstExitCode } from "../exit.js"
import { printStatements } from "../plan-render.js"
import { collectPartsSooner } from "../heap-growth.js"
import { paramOption, useParams } from "../params.js"
import { manifest } from "../manifest.js"
import { cliProgress, jsonProgress } from "../progress.js"
import { gracefulStop, reportInterrupted, trackRunning } from "../signals.js"
import { validateAfterRun } from "../validate-after-run.js"

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

const runVerboseOption = Options.boolean("verbose").pipe(
  Options.withDescription(
    "Show error details (causes, stack traces) for bug reports, the SQL each export ran, and on a terminal a block per export as it finishes instead of the closing table."
  )
)

const resumeOption = Options.boolean("resume").pipe(
  Options.withDescription(
    "Continue the unfinished checkpointed run of each export (chunk_checkpoint: true): committed chunks/pages are kept, the rest redone."
  )
)

const waitOption = Options.text("wait").pipe(
  Options.optional,
  Options.withDescription(
    "When another run of an export is under way (it holds the export's lease), wait up to this long for it to finish (e.g. 30s, 10m) instead of exiting 2 at once."
  )
)

const validateOption = Options.boolean("validate").pipe(
  Options.withDescription(
    "After each successful export, validate its destination as `rivet validate` does (re-reads every part); a mismatch exits 3."
  )
)

const jsonOption = Options.boolean("json").pipe(
  Options.withDescription(
    "Machine-readable events on stderr, one JSON object per line (run_started, progress, part_committed, warning, export_finished, error, interrupted) instead of the progress line and summaries."
  )
)

const planOption = Options.file("plan", { exists: "yes" }).pipe(
  Options.optional,
  Options.withDescription(
    "Run exactly the plan `rivet plan -o` wrote (its statements, chunk ranges, cursor bounds); refused when it is older than 24 h, made from another config, or the config or stored cursor changed since."
  )
)

const workerOption = Options.boolean("worker").pipe(
  Options.withDescription(
    "Join a distributed run as one of many worker processes (chunked exports, PostgreSQL state via RIVET_STATE_URL): claim chunks until none is left, then exit 0. Needs --run-id or RIVET_RUN_ID."
  )
)

const runIdOption = Options.text("run-id").pipe(
  Options.optional,
  Options.withDescription(
    "With --worker: the run every worker of it names alike (e.g. Airflow's {{ run_id }}, a Kubernetes Job's uid). Default: RIVET_RUN_ID."
  )
)

const followOption = Options.boolean("follow").pipe(
  Options.withDescription(
    "Keep reading change logs (mode: cdc exports; the others run once first): publish a window every cdc.commit_interval (default 60s) or max_events changes, until SIGTERM or Ctrl-C, which publishes the open window and exits 0 (a second signal interrupts)."
  )
)

const noEncoderThreadOption = Options.boolean("no-encoder-thread").pipe(
  Options.withDescription(
    "Encode every part on the thread that reads the source, instead of an encoder thread per export (the default when a second core is free): to rule the thread out when reporting a problem."
  )
)

/** `rivet run -c export.yaml [-e name]… [--resume] [--json]` — runs the exports and prints a summary per export. */
export const runCommand = Command.make(
  "run",
  { config: configOption, exports: exportOption, params: paramOption, verbose: runVerboseOption, resume: resumeOption, json: jsonOption, validate: validateOption, plan: planOption, wait: waitOption, worker: workerOption, runId: runIdOption, noEncoderThread: noEncoderThreadOption, follow: followOption },
  ({ config, exports, params, verbose, resume, json, validate, plan, wait, worker, runId, noEncoderThread, follow }) =>
    Effect.gen(function* () {
      const badParams = yield* useParams(params, config, { json })
      if (badParams) return badParams
      const loaded = yield* validateConfigFile(config)
      if (Either.isLeft(loaded)) {
        if (!json) return yield* configFailure(loaded.left)
        yield* printErrors(loaded.left, { json })
        return new ExitCode(1)
      }
      const plans = Option.isNone(plan)
        ? undefined
        : yield* Effect.either(
            resume
              ? new ConfigError({ path: "--plan", message: "cannot be combined with --resume", hint: "--resume continues a run with the chunks it recorded; drop one of the two" })
              : loadPlanFor(plan.value, config, loaded.right, { only: exports })
          )
      if (plans && Either.isLeft(plans)) {
        yield* printErrors([plans.left], { json })
        return new ExitCode(1)
      }
      const planned = plans?.right
      const waitMs = Option.isNone(wait) ? 0 : parseDuration(wait.value)
      if (waitMs === undefined) {
        yield* printErrors([new ConfigError({ path: "--wait", message: durationProblem(Option.getOrThrow(wait)), hint: "e.g. --wait 10m" })], { json })
        return new ExitCode(1)
      }
      const givenRunId = Option.getOrUndefined(runId) ?? (process.env[RUN_ID_VARIABLE] || undefined)
      const workerRunId = worker
        ? yield* Effect.either(
            resume || planned
              ? new ConfigError({ path: "--worker", message: `cannot be combined with ${resume ? "--resume" : "--plan"}`, hint: "a worker joins (or plans) the run named by --run-id; a run's unfinished units are claimed by its workers" })
              : checkRunId(givenRunId, Option.isSome(runId) ? "--run-id" : RUN_ID_VARIABLE)
          )
        : undefined
      if (workerRunId && Either.isLeft(workerRunId)) {
        yield* printErrors([workerRunId.left], { json })
        return new ExitCode(1)
      }
      const selected = planned ? [...planned.keys()] : exports
      const toRun = loaded.right.exports.filter((spec) => selected.length === 0 || selected.includes(spec.name))
      // Rows written to the terminal would be redrawn over by the live lines: those runs get the plain lines.
      const dataOnStdout = toRun.some((spec) => spec.destination.plugin.type === "stdout")
      if (toRun.some((spec) => spec.partition !== undefined)) collectPartsSooner()
      const reporting = trackRunning(json ? jsonProgress : cliProgress({ verbose, dataOnStdout }))
      const startedAt = Date.now()
      const stop = follow || toRun.some((spec) => spec.mode.continuous)
        ? gracefulStop((signal) =>
            process.stderr.write(
              json
                ? `${JSON.stringify({ event: "stopping", time: new Date().toISOString(), signal })}\n`
                : `rivet: ${signal}: publishing the windows being read, then stopping (send it again to interrupt)\n`
            )
          )
        : undefined
      const runs = yield* runConfig(loaded.right, {
        only: selected,
        resume,
        plans: planned,
        waitMs,
        workerRunId: workerRunId?.right,
        state: stateLayerFor({ configDir: loaded.right.configDir, env: process.env }),
        lanesWorker: LANES_WORKER_URL,
        encoderThread: !noEncoderThread,
        follow,
        stop
      }).pipe(
        Effect.provide(reporting.layer),
        Effect.provide(telemetryLayer(process.env, { version: manifest.version, config: loaded.right.telemetry })),
        // After runConfig's own cleanup: by then statements are cancelled and uploads aborted.
        Effect.onInterrupt(() => reportInterrupted({ json, exports: reporting.names(), startedAt })),
        Effect.either
      )
      if (Either.isLeft(runs)) {
        yield* printErrors([runs.left], { json, verbose })
        return new ExitCode(worstExitCode([runs.left]))
      }
      const errors = runs.right.flatMap((run) => (run._tag === "failure" ? [run.error] : []))
      if (verbose) yield* printStatements(runs.right.flatMap((run) => (run._tag === "success" ? [run.result] : [])), json)
      if (validate) errors.push(...(yield* validateAfterRun(loaded.right, runs.right, { json })))
      yield* printErrors(errors, { json, verbose })
      return new ExitCode(worstExitCode(errors))
    })
).pipe(
  Command.withDescription(
    "Export tables to files.\n\nExample:\n  rivet run -c examples/quickstart.yaml\n  rivet run -c export.yaml -e orders -e customers\n  rivet run -c export.yaml -p RUN_DATE=2026-12-01\n  rivet run -c export.yaml --resume\n  rivet run -c export.yaml --wait 10m\n  rivet run -c export.yaml --validate\n  rivet run -c changes.yaml --follow\n  rivet plan -c export.yaml -o plan.json && rivet run -c export.yaml --plan plan.json\n  rivet run -c export.yaml --json 2> events.ndjson\n  RIVET_STATE_URL=postgres://… rivet run -c export.yaml --worker --run-id nightly-2026-12-05"
  )
)
