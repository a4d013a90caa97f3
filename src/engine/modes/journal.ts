import { randomBytes } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import type { RunRecord } from "../../state/store.js"
import { ConfigError, StateError } from "../../core/errors.js"
import { makeRunId } from "../../core/naming.js"
import type { TakeOver } from "../lease.js"
import type { ExportContext } from "./context.js"
import { joinRun, runningDistributedRun } from "./join-run.js"
import type { PreparedMode, RunJournal } from "./mode.js"
import { checkRunIdentity, encodeRunIdentity } from "./run-identity.js"

const resetHint = (name: string) => `or start over with \`rivet state reset -c <config> -e ${name}\``

/**
 * Why a plain run does not start over an unfinished checkpointed run. When this run took over the unfinished run's
 * expired lease, its holder stopped renewing it but may well be alive (cut off from the state store, paused): that
 * is said as such, and is retryable, since the holder stops without publishing once it finds its lease lost.
 */
const notFinished = (exportName: string, run: RunRecord, tookOver: TakeOver | undefined): StateError => {
  const resumeHint = `continue it with \`rivet run -c <config> --resume\`, ${resetHint(exportName)}`
  if (run.status !== "running") {
    return new StateError({
      message: `export '${exportName}': checkpointed run '${run.runId}' did not finish (${run.status}${run.error ? `: ${run.error}` : ""})`,
      hint: resumeHint
    })
  }
  const holder = tookOver !== undefined && (tookOver.holder.runId ?? run.runId) === run.runId ? tookOver : undefined
  if (holder?.expired === true) {
    return new StateError({
      message:
        `export '${exportName}': checkpointed run '${run.runId}' did not finish: its process (pid ${holder.holder.pid} on ${holder.holder.host}) ` +
        `stopped renewing the export's lease (last heartbeat at ${holder.holder.heartbeatAt}) and this run took the expired lease over. ` +
        "That process may still be running, cut off from the state store; it stops without publishing once it finds its lease lost",
      hint: `retry later; ${resumeHint}`,
      retryable: true
    })
  }
  return new StateError({
    // The export's lease is held by this run, so no process can still publish the unfinished one.
    message:
      holder === undefined
        ? `export '${exportName}': checkpointed run '${run.runId}' did not finish: its process stopped without recording an outcome (killed, crashed, or cut off from the state store until its lease expired; no run holds the export's lease any more)`
        : `export '${exportName}': checkpointed run '${run.runId}' did not finish: its process (pid ${holder.holder.pid} on ${holder.holder.host}) no longer exists (killed or crashed)`,
    hint: resumeHint
  })
}

/**
 * Decides whether this run continues an unfinished checkpointed run or starts a new one, and journals it.
 * A plain run never silently abandons a checkpointed run that did not finish; `--resume` continues it only when
 * its plan (query, key, sizes, format, destination) and its identity (source, output settings) are still the same.
 */
export const openJournal = Effect.fn("Pipeline.openJournal")(function* (
  ctx: ExportContext,
  prepared: PreparedMode,
  resume: boolean,
  tookOver?: TakeOver
) {
  if (ctx.worker !== undefined) return yield* joinRun(ctx, prepared, ctx.worker)
  const { spec, state } = ctx
  // Its workers hold no export lease: a plain run beside them would publish over their run (or redo its units).
  const distributed = yield* runningDistributedRun(ctx)
  if (distributed !== undefined) {
    return yield* new StateError({
      message: `export '${spec.name}' is being run by the workers of distributed run '${distributed}' (\`rivet run --worker\`)`,
      hint: `let them finish, or add workers with \`rivet run -c <config> --worker --run-id ${distributed.slice(spec.name.length + 1)}\`; ${resetHint(spec.name).replace(/^or /, "or to give it up, ")}`,
      retryable: true
    })
  }
  const unfinished: Option.Option<RunRecord> = prepared.checkpointed
    ? yield* state.unfinishedRun(spec.name)
    : Option.none()
  if (Option.isSome(unfinished)) {
    const run = unfinished.value
    if (!resume) return yield* notFinished(spec.name, run, tookOver)
    if (ctx.identity !== undefined) yield* checkRunIdentity(spec, run, ctx.identity, "resume", resetHint(spec.name))
    if (run.planFingerprint !== prepared.fingerprint) {
      return yield* new ConfigError({
        path: `export '${spec.name}'`,
        message: `cannot resume run '${run.runId}': its plan no longer matches the config (the query, key column, chunk or page size, format or destination changed)`,
        hint: `restore the config it ran with, ${resetHint(spec.name)}`
      })
    }
    yield* state.reopenRun(run.runId)
    yield* ctx.reporter.notice(spec.name, `resuming run '${run.runId}'`)
    return { runId: run.runId, startedAt: new Date(run.startedAt), resumed: true } satisfies RunJournal
  }
  if (resume) {
    yield* ctx.reporter.notice(
      spec.name,
      prepared.checkpointed
        ? "nothing to resume: starting a new run"
        : `--resume has no effect on mode: ${spec.mode.kind}${spec.mode.resumableWith === undefined ? "" : ` without ${spec.mode.resumableWith}`}; starting a new run`
    )
  }
  const startedAt = ctx.now()
  const runId = yield* beginNewRun(ctx, prepared, startedAt)
  return { runId, startedAt, resumed: false } satisfies RunJournal
})

/** How many suffixed ids a new run tries after its plain id was taken, before the store's refusal stands. */
const SUFFIXED_TRIES = 3

/**
 * Journals a new run under the documented `{export}_{YYYYMMDD}T{HHMMSS}.{mmm}` id. Two runs of an export started in
 * the same millisecond (two processes, or a pinned clock) would share it: the store's insert refuses the second, and
 * only then does the run take the id with a short random suffix, `…{mmm}-{4 hex}`. The insert decides, not a read
 * before it, because the other run may be inserting at that very moment.
 */
const beginNewRun = (ctx: ExportContext, prepared: PreparedMode, startedAt: Date) =>
  Effect.gen(function* () {
    const { spec, state } = ctx
    const plain = makeRunId(spec.name, startedAt)
    for (let attempt = 0; ; attempt++) {
      const runId = attempt === 0 ? plain : `${plain}-${randomBytes(2).toString("hex")}`
      const begun = yield* Effect.either(
        state.beginRun({
          runId,
          exportName: spec.name,
          mode: spec.mode.kind,
          startedAt: startedAt.toISOString(),
          status: "running",
          rows: 0,
          parts: 0,
          bytes: 0,
          checkpointed: prepared.checkpointed,
          planFingerprint: prepared.checkpointed ? prepared.fingerprint : undefined,
          identity: prepared.checkpointed && ctx.identity !== undefined ? encodeRunIdentity(ctx.identity) : undefined
        })
      )
      if (Either.isRight(begun)) return runId
      // Only a taken id is worth another try; any other failure of the insert is the store's to report.
      const taken = yield* state.run(runId).pipe(Effect.orElseSucceed(() => Option.none()))
      if (Option.isNone(taken) || attempt >= SUFFIXED_TRIES) return yield* begun.left
    }
  })
