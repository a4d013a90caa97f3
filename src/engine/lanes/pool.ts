import { Worker } from "node:worker_threads"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import { describeCause, type RivetError } from "../../core/errors.js"
import type { ExportContext } from "../modes/context.js"
import type { UnitOutcome } from "../modes/run-unit.js"
import type { ExportProgress } from "../../core/progress.js"
import { decodeError, encodeError, workerLost } from "./errors.js"
import type { FromWorker, LaneInit, ProgressDelta, ToWorker } from "./protocol.js"
import { type ChunkRunner, type ChunkWork, inProcessRunner } from "../modes/chunk-work.js"

/** How long a worker may take to close its chunk's scope (abort uploads, remove temp files) before it is terminated. */
const STOP_GRACE = "10 seconds"

type Inbound = FromWorker | { readonly _tag: "Exited"; readonly reason: string }

/** One worker thread and the messages it sent that someone still has to read. */
interface Lane {
  readonly worker: Worker
  readonly inbox: Queue.Queue<Inbound>
  alive: boolean
  /** Its drivers are built; before that it holds nothing to release and is simply terminated. */
  ready: boolean
}

export interface LaneSettings {
  /** The config file the run was loaded from (absolute). */
  readonly configFile: string
  readonly env: Readonly<Record<string, string | undefined>>
}

const initOf = (ctx: ExportContext, settings: LaneSettings): LaneInit => ({
  configFile: settings.configFile,
  env: settings.env,
  exportName: ctx.spec.name,
  retry: {
    maxRetries: ctx.retry.maxRetries,
    initialDelayMs: Duration.toMillis(Duration.decode(ctx.retry.initialDelay)),
    maxDelayMs: Duration.toMillis(Duration.decode(ctx.retry.maxDelay))
  },
  expect: {
    sinkUri: ctx.sink.uri(),
    extension: ctx.format.extension,
    compression: ctx.format.compression,
    maxFileSize: ctx.spec.maxFileSize
  }
})

const addProgress = (progress: ExportProgress, delta: ProgressDelta) => {
  progress.rows += delta.rows
  progress.bytes += delta.bytes
  progress.parts += delta.parts
  progress.retries += delta.retries
}

const post = (lane: Lane, message: ToWorker) => lane.worker.postMessage(message)

/** Reads the lane's messages until one with this tag (or the thread's end); what comes before is stale. */
const awaitTag = (lane: Lane, tag: "Aborted" | "Exited") =>
  Effect.gen(function* () {
    for (;;) {
      const message = yield* Queue.take(lane.inbox)
      if (message._tag === tag || message._tag === "Exited") return
    }
  })

/**
 * Waits, for at most STOP_GRACE, until the lane's thread has done what it was asked; the wait itself stays
 * interruptible even where it runs in a finalizer.
 */
const awaitStopped = (lane: Lane, tag: "Aborted" | "Exited") =>
  awaitTag(lane, tag).pipe(Effect.interruptible, Effect.timeout(STOP_GRACE), Effect.option)

const terminate = (lane: Lane) =>
  Effect.promise(() => lane.worker.terminate().catch(() => undefined)).pipe(
    Effect.tap(() => Effect.sync(() => (lane.alive = false)))
  )

/** Closes a lane's thread: it releases its source, format and sink, then ends; terminated if it does not. */
const closeLane = (lane: Lane) =>
  Effect.gen(function* () {
    if (lane.alive && lane.ready) {
      post(lane, { _tag: "Close" })
      yield* awaitStopped(lane, "Exited")
    }
    yield* terminate(lane)
  })

/** Interrupts the chunk a lane runs and waits until its scope closed (uploads aborted, temp files removed). */
const abortLane = (ctx: ExportContext, lane: Lane) =>
  Effect.gen(function* () {
    if (!lane.alive) return
    post(lane, { _tag: "Abort" })
    if (Option.isSome(yield* awaitStopped(lane, "Aborted"))) return
    yield* terminate(lane)
    yield* ctx.reporter.notice(
      ctx.spec.name,
      `a chunk worker thread did not stop within ${STOP_GRACE} and was terminated; the next run removes any temp file it left`
    )
  })

/** Starts one worker thread and waits until it has built its drivers; the scope's close ends it. */
const startLane = (ctx: ExportContext, url: URL, init: LaneInit): Effect.Effect<Lane, RivetError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.gen(function* () {
      const inbox = yield* Queue.unbounded<Inbound>()
      const worker = yield* Effect.try({
        try: () => new Worker(url, { workerData: init }),
        catch: (cause) => workerLost(ctx.spec.name, `it could not be started: ${describeCause(cause)}`)
      })
      const lane: Lane = { worker, inbox, alive: true, ready: false }
      worker.on("message", (message: FromWorker) => {
        if (message._tag === "Progress") addProgress(ctx.progress, message)
        else Queue.unsafeOffer(inbox, message)
      })
      worker.on("error", (error) => Queue.unsafeOffer(inbox, { _tag: "Exited", reason: describeCause(error) }))
      worker.on("exit", (code) => {
        lane.alive = false
        Queue.unsafeOffer(inbox, { _tag: "Exited", reason: `it exited with code ${code}` })
      })
      return lane
    }),
    closeLane
  ).pipe(
    Effect.tap((lane) =>
      Effect.gen(function* () {
        for (;;) {
          const message = yield* Queue.take(lane.inbox)
          switch (message._tag) {
            case "Ready":
              lane.ready = true
              return
            case "StartFailed":
              return yield* Effect.fail(decodeError(ctx.spec.name, message.error))
            case "Exited":
              return yield* Effect.fail(workerLost(ctx.spec.name, message.reason))
            default:
              yield* relayReport(ctx, message)
          }
        }
      })
    )
  )

/** Passes what a worker told its reporter on to the export's reporter. */
const relayReport = (ctx: ExportContext, message: Inbound): Effect.Effect<void> => {
  switch (message._tag) {
    case "Notice":
      return ctx.reporter.notice(ctx.spec.name, message.message)
    case "PartCommitted":
      return ctx.reporter.partCommitted?.(ctx.spec.name, message.part) ?? Effect.void
    default:
      return Effect.void
  }
}

/** Runs one chunk on a lane, answering its schema checks; an interruption aborts the chunk in the thread. */
const runOn = (ctx: ExportContext, lane: Lane, work: ChunkWork): Effect.Effect<UnitOutcome, RivetError> =>
  Effect.gen(function* () {
    post(lane, { _tag: "Run", work })
    for (;;) {
      const message = yield* Queue.take(lane.inbox)
      switch (message._tag) {
        case "CheckSchema": {
          const checked = yield* Effect.either(ctx.checkSchema(message.schema))
          post(lane, {
            _tag: "SchemaChecked",
            error: Either.isLeft(checked) ? encodeError(ctx.spec.name, checked.left) : undefined
          })
          break
        }
        case "Done":
          return message.outcome
        case "Failed":
          return yield* Effect.fail(decodeError(ctx.spec.name, message.error))
        case "Exited":
          return yield* Effect.fail(workerLost(ctx.spec.name, message.reason))
        default:
          yield* relayReport(ctx, message)
      }
    }
  }).pipe(Effect.onInterrupt(() => abortLane(ctx, lane)))

/**
 * Runs chunks `count` at a time: one in this thread, the others in `count - 1` worker threads, each with its own
 * source, format and sink built from the config file. This thread mostly waits while the chunks run, so it takes a
 * share of them itself rather than start one more worker (each costs ~1.5 CPU-s to start and ~200 MB). Chunks start
 * here at once; each worker joins when it is ready, so its start-up is not on the run's critical path. A worker that
 * cannot start only means fewer lanes (a notice says why): this thread can run every chunk. The main thread keeps
 * planning, state, the manifest and progress (workers report row, byte, part and retry counts as they go). Every
 * worker ends when the scope closes.
 */
export const startLanes = (
  ctx: ExportContext,
  settings: LaneSettings,
  count: number,
  url: URL
): Effect.Effect<ChunkRunner, RivetError, Scope.Scope> =>
  Effect.gen(function* () {
    const init = initOf(ctx, settings)
    const scope = yield* Effect.scope
    const here = inProcessRunner(ctx)
    const idle = yield* Queue.bounded<Lane | "here">(count)
    yield* Queue.offer(idle, "here")
    let joined = 0
    for (let i = 1; i < count; i++) {
      // The lane lives in a scope of its own, made before the starter fiber: closing the export's scope then
      // interrupts a starter still waiting for its thread first, and only after that ends the thread — not the other
      // way round, which the starter would report as a thread that could not start.
      const laneScope = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      yield* Effect.forkScoped(
        startLane(ctx, url, init).pipe(
          Scope.extend(laneScope),
          Effect.flatMap((lane) => Effect.zipRight(Effect.sync(() => joined++), Queue.offer(idle, lane))),
          Effect.catchAll((error) =>
            ctx.reporter.notice(
              ctx.spec.name,
              `a chunk worker thread could not start, so its chunks run in this thread: ${error.message}`
            )
          )
        )
      )
    }
    // Counted from the chunks each side reported done: what the notice says is what happened.
    const ran = { here: 0, workers: 0 }
    yield* Effect.addFinalizer((exit) =>
      Exit.isSuccess(exit)
        ? ctx.reporter.notice(
            ctx.spec.name,
            joined === 0
              ? `chunks ran in this thread (${ran.here}): they were done before a worker thread was ready`
              : `chunks ran in ${joined} worker thread${joined === 1 ? "" : "s"} (${ran.workers}) and in this thread (${ran.here})`
          )
        : Effect.void
    )
    return (work: ChunkWork) =>
      Effect.acquireUseRelease(
        Queue.take(idle),
        (lane) =>
          lane === "here"
            ? Effect.tap(here(work), () => Effect.sync(() => ran.here++))
            : Effect.tap(runOn(ctx, lane, work), () => Effect.sync(() => ran.workers++)),
        (lane) => (lane === "here" || lane.alive ? Queue.offer(idle, lane) : Effect.void)
      )
  })
