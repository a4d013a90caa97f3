import { Worker as Thread } from "node:worker_threads"
import * as Worker from "@effect/platform/Worker"
import type { WorkerError } from "@effect/platform/WorkerError"
import * as NodeWorker from "@effect/platform-node/NodeWorker"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Logger from "effect/Logger"
import * as LogLevel from "effect/LogLevel"
import * as Option from "effect/Option"
import type * as ParseResult from "effect/ParseResult"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { describeCause, type RivetError } from "../../core/errors.js"
import type { UnitContext } from "../modes/unit-context.js"
import type { UnitOutcome } from "../modes/unit.js"
import { decodeError, workerLost } from "./errors.js"
import { type ChunkEvent, type LaneInit, type LaneRequest, OpenLane, RunChunk, SchemaChecked } from "./protocol.js"
import type { AttemptMeter } from "../live-progress.js"
import { recordUnit } from "../telemetry/metrics.js"
import { type ChunkRunner, type ChunkWork, heldWhileReading, runChunkHere } from "../modes/chunk-work.js"

/** One worker thread (an @effect/platform Worker) that has built the export's drivers. */
interface Lane {
  readonly worker: Worker.SerializedWorker<LaneRequest>
  /** Closing it closes the thread: it releases its source, format and sink, then ends (terminated after 5 s). */
  readonly scope: Scope.CloseableScope
  /** The thread's exit code, once it has ended. */
  readonly exited: Deferred.Deferred<number>
  /** `lane-1`, `lane-2`, … (metrics). */
  readonly name: string
}

export interface LaneSettings {
  /** The config file the run was loaded from (absolute). */
  readonly configFile: string
  readonly env: Readonly<Record<string, string | undefined>>
  /** At most this many worker threads (`RIVET_LANES`); unset: as many as the cores pay for (runner.ts). */
  readonly threads?: number | undefined
  /** The worker threads' entry module, given by the edge that knows how to load a config (src/lanes-worker.ts). */
  readonly workerEntry: URL
}

const initOf = (ctx: UnitContext, settings: LaneSettings): Omit<LaneInit, "lane"> => ({
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

/**
 * What a Worker failure means for the export. The platform reports a lane that could not start as a "spawn" error
 * whose cause is the encoded tagged error of the worker's `OpenLane`.
 */
const fromWorkerError = (exportName: string, error: WorkerError): RivetError => {
  if (error.reason === "spawn" && typeof error.cause === "object" && error.cause !== null) {
    if ("_tag" in error.cause && error.cause._tag === "WorkerError") {
      return fromWorkerError(exportName, error.cause as WorkerError)
    }
    return decodeError(exportName, error.cause)
  }
  return workerLost(exportName, describeCause(error.cause))
}

/**
 * A lane's stream or answer failed: a tagged error from the chunk stays as it is; a lost thread (its scope is closed:
 * the lane is not used again) or an unreadable message becomes the export's PluginError.
 */
const laneFailed =
  (ctx: UnitContext, lane: Lane) =>
  (error: RivetError | WorkerError | ParseResult.ParseError): Effect.Effect<never, RivetError> => {
    switch (error._tag) {
      case "WorkerError":
        return Effect.zipRight(Scope.close(lane.scope, Exit.void), Effect.fail(fromWorkerError(ctx.spec.name, error)))
      case "ParseError":
        return Effect.fail(workerLost(ctx.spec.name, `it sent a message that could not be read: ${error.message}`))
      default:
        return Effect.fail(error)
    }
  }

/**
 * Interrupts the chunk a lane runs and closes the lane: its thread aborts uploads and removes temp files, then ends.
 * The platform gives it 5 seconds before it terminates the thread; the scope may already be closing (the export
 * ends), so the wait is for the thread's exit itself.
 */
const stopLane = (ctx: UnitContext, lane: Lane) =>
  Effect.gen(function* () {
    yield* Scope.close(lane.scope, Exit.void)
    const code = yield* Deferred.await(lane.exited).pipe(Effect.timeout("6 seconds"), Effect.option)
    if (Option.isSome(code) && code.value === 0) return
    yield* ctx.reporter.notice(
      ctx.spec.name,
      "a chunk worker thread did not stop within 5 seconds and was terminated; the next run removes any temp file it left"
    )
  })

/** Starts one worker thread in `scope` and waits until it has built its drivers. */
const startLane = (
  ctx: UnitContext,
  url: URL,
  init: LaneInit,
  scope: Scope.CloseableScope,
  name: string
): Effect.Effect<Lane, RivetError> =>
  Effect.gen(function* () {
    const exited = yield* Deferred.make<number>()
    let thread: Thread | undefined
    const spawn = () => {
      thread = new Thread(url)
      thread.once("exit", (code) => Deferred.unsafeDone(exited, Exit.succeed(code)))
      return thread
    }
    const worker = yield* Worker.makeSerialized<LaneRequest>({ initialMessage: () => new OpenLane({ init }) }).pipe(
      Effect.provide(NodeWorker.layer(spawn)),
      // A lost thread is reported as the chunk's failure (laneFailed), not logged by the platform.
      Logger.withMinimumLogLevel(LogLevel.None),
      Scope.extend(scope),
      // Still building its drivers, the thread holds nothing to release: it is simply terminated.
      Effect.onInterrupt(() => Effect.promise(async () => void (await thread?.terminate())).pipe(Effect.ignore)),
      Effect.mapError((error) => fromWorkerError(ctx.spec.name, error))
    )
    return { worker, scope, exited, name }
  })

/**
 * Runs one chunk on a lane, answering its schema checks and running `read` once the chunk's source is read; an
 * interruption aborts the chunk in the thread.
 */
const runOn = (
  ctx: UnitContext,
  lane: Lane,
  work: ChunkWork,
  meter: AttemptMeter,
  read: Effect.Effect<void>
): Effect.Effect<UnitOutcome, RivetError> => {
  const onEvent = (event: ChunkEvent): Effect.Effect<Option.Option<UnitOutcome>, RivetError | WorkerError | ParseResult.ParseError> => {
    switch (event._tag) {
      case "Progress":
        return Effect.as(meter.report(event), Option.none())
      case "CheckSchema":
        return Effect.either(ctx.checkSchema(event.schema)).pipe(
          Effect.flatMap((checked) =>
            lane.worker.executeEffect(new SchemaChecked({ error: Either.isLeft(checked) ? checked.left : undefined }))
          ),
          Effect.as(Option.none())
        )
      case "SourceEnded":
        return Effect.as(read, Option.none())
      case "Notice":
        return Effect.as(ctx.reporter.notice(ctx.spec.name, event.message), Option.none())
      case "PartCommitted":
        return Effect.as(ctx.reporter.partCommitted?.(ctx.spec.name, event.part) ?? Effect.void, Option.none())
      case "Done":
        return Effect.as(
          recordUnit({ exportName: ctx.spec.name, unit: "chunk", lane: lane.name }, event.outcome.timings),
          Option.some(event.outcome)
        )
    }
  }
  // A thread lost while idle would come back as a new one without drivers (the platform respawns it): not used.
  const notLost = Effect.flatMap(Deferred.poll(lane.exited), (exited) =>
    Option.isSome(exited)
      ? Effect.flatMap(exited.value, (code) => Effect.fail(workerLost(ctx.spec.name, `it exited with code ${code}`)))
      : Effect.void
  )
  const parent = Effect.map(
    Effect.option(Effect.currentSpan),
    Option.map((span) => ({ traceId: span.traceId, spanId: span.spanId, sampled: span.sampled }))
  )
  const run = Stream.unwrap(
    Effect.map(parent, (span) => lane.worker.execute(new RunChunk({ work, parent: Option.getOrUndefined(span) })))
  ).pipe(
    Stream.mapEffect(onEvent),
    Stream.filterMap((outcome) => outcome),
    Stream.runHead,
    Effect.flatMap(
      Option.match({
        onNone: () => Effect.fail(workerLost(ctx.spec.name, "it ended a chunk without its outcome")),
        onSome: Effect.succeed
      })
    )
  )
  return Effect.zipRight(notLost, run).pipe(
    Effect.catchAll(laneFailed(ctx, lane)),
    Effect.onInterrupt(() => stopLane(ctx, lane))
  )
}

/**
 * Runs chunks `lanes` at a time: `threads` of the lanes in worker threads, each with its own source, format and sink
 * built from the config file, and the others in this thread — at least one: this thread mostly waits while the
 * chunks run, so it takes a share of them itself rather than start one more worker (each costs ~1.5 CPU-s to start
 * and ~200 MB). Chunks start here at once; each worker joins when it is ready, so its start-up is not on the run's
 * critical path. A worker that cannot start only means fewer lanes (a notice says why): this thread can run every
 * chunk. The main thread keeps planning, state, the manifest and progress (workers report row, byte, part and retry
 * counts as they go). Every worker ends when the scope closes.
 */
export const startLanes = (
  ctx: UnitContext,
  settings: LaneSettings,
  { lanes, threads, overlap }: { readonly lanes: number; readonly threads: number; readonly overlap: boolean }
): Effect.Effect<ChunkRunner, RivetError, Scope.Scope> =>
  Effect.gen(function* () {
    const init = initOf(ctx, settings)
    const scope = yield* Effect.scope
    const idle = yield* Queue.bounded<Lane | "here">(lanes)
    yield* Queue.offerAll(idle, Array.from({ length: lanes - threads }, () => "here" as const))
    let joined = 0
    for (let i = 1; i <= threads; i++) {
      // The lane lives in a scope of its own, made before the starter fiber: closing the export's scope then
      // interrupts a starter still waiting for its thread first, and only after that ends the thread — not the other
      // way round, which the starter would report as a thread that could not start.
      const laneScope = yield* Scope.fork(scope, ExecutionStrategy.sequential)
      yield* Effect.forkScoped(
        startLane(ctx, settings.workerEntry, { ...init, lane: i }, laneScope, `lane-${i}`).pipe(
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
    // With `overlap`, a lane takes its next chunk as soon as its chunk is read: the thread then also finishes the
    // chunks before it.
    return (work: ChunkWork) =>
      heldWhileReading(
        Queue.take(idle),
        // A lane whose thread was lost or stopped is not used again.
        (lane) =>
          lane === "here"
            ? Queue.offer(idle, lane)
            : Effect.flatMap(Deferred.isDone(lane.exited), (ended) => (ended ? Effect.void : Queue.offer(idle, lane))),
        overlap,
        (lane, read) =>
          lane === "here"
            ? Effect.tap(runChunkHere(ctx, work, read), () => Effect.sync(() => ran.here++))
            : Effect.tap(
                ctx.progress.attempt((meter) => runOn(ctx, lane, work, meter, read)),
                () => Effect.sync(() => ran.workers++)
              )
      )
  })
