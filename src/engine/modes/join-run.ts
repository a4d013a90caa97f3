import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ConfigError, StateError } from "../../core/errors.js"
import type { WorkerJoin } from "../worker-join.js"
import type { ExportContext } from "./context.js"
import type { PreparedMode, RunJournal } from "./mode.js"
import { checkRunIdentity, encodeRunIdentity } from "./run-identity.js"

/**
 * A worker's journal: the run named by `--run-id`, planned by whichever worker arrives first (its whole chunk plan
 * is saved with the run in one transaction) and joined by the others, each of which must have the same plan
 * fingerprint and identity — a worker started with another source, query, chunk size, format option, destination or
 * `parallel` is refused, naming what differs.
 */
export const joinRun = Effect.fn("Pipeline.joinRun")(function* (ctx: ExportContext, prepared: PreparedMode, worker: WorkerJoin) {
  const { spec, state } = ctx
  let found = yield* state.run(worker.runId)
  let created = false
  if (Option.isNone(found)) {
    const plan = yield* prepared.plan
    const ranges = plan.chunks?.ranges ?? []
    created = yield* worker.claims.createRun(
      {
        runId: worker.runId,
        exportName: spec.name,
        mode: spec.mode.kind,
        startedAt: ctx.now().toISOString(),
        status: "running",
        rows: 0,
        parts: 0,
        bytes: 0,
        checkpointed: true,
        planFingerprint: prepared.fingerprint,
        identity: ctx.identity === undefined ? undefined : encodeRunIdentity(ctx.identity)
      },
      ranges.map((range, index) => ({ index, spec: JSON.stringify(range), status: "pending" as const, rows: 0 }))
    )
    found = yield* state.run(worker.runId)
  }
  if (Option.isNone(found)) {
    return yield* new StateError({ message: `run '${worker.runId}' was neither found nor created in the state at ${state.location}`, retryable: true })
  }
  const run = found.value
  const startOver = "or give a new run a new --run-id"
  if (run.exportName === spec.name && ctx.identity !== undefined) yield* checkRunIdentity(spec, run, ctx.identity, "join", startOver)
  if (run.exportName !== spec.name || run.planFingerprint !== prepared.fingerprint) {
    return yield* new ConfigError({
      path: `export '${spec.name}'`,
      message: `this worker cannot join run '${run.runId}': the run was planned with another config (the query, chunk column or size, parallel, format or destination differ)`,
      hint: "start every worker of a run with the same config and parameters, or give a new run a new --run-id"
    })
  }
  if (run.status === "abandoned") {
    return yield* new StateError({
      message: `run '${run.runId}' was abandoned (\`rivet state reset\`); workers no longer join it`,
      hint: "give the next run a new --run-id"
    })
  }
  yield* ctx.reporter.notice(
    spec.name,
    run.status === "success"
      ? `run '${run.runId}' is already published: this worker has nothing to do`
      : `${created ? "planned" : "joined"} run '${run.runId}' as worker ${worker.id}`
  )
  return { runId: run.runId, startedAt: new Date(run.startedAt), resumed: true } satisfies RunJournal
})

/** The export's distributed run that workers are still running, if any (PostgreSQL state only). */
export const runningDistributedRun = (ctx: ExportContext): Effect.Effect<string | undefined, StateError> =>
  Effect.gen(function* () {
    // The newest unfinished checkpointed run comes from an index; only its own units are read, and only then.
    const { claims } = ctx.state
    if (claims === undefined) return undefined
    const run = yield* ctx.state.unfinishedRun(ctx.spec.name)
    if (Option.isNone(run) || run.value.status !== "running") return undefined
    const units = yield* claims.leases(ctx.spec.name, run.value.runId)
    return units.some((unit) => unit.claims > 0) ? run.value.runId : undefined
  })
