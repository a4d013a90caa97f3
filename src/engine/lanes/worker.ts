import { parentPort, threadId, workerData } from "node:worker_threads"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Queue from "effect/Queue"
import * as Schedule from "effect/Schedule"
import { loadConfigFile } from "../../registry/load-config.js"
import type { BatchSchema } from "../../core/batch.js"
import { ConfigError } from "../../core/errors.js"
import { exportLayer, sourceLayer } from "../layers.js"
import { runAttempt } from "../modes/attempt.js"
import type { UnitContext } from "../modes/run-unit.js"
import { FormatDriver, SinkDriver, SourceDriver } from "../../core/plugin.js"
import type { ExportProgress } from "../../core/progress.js"
import { decodeError, type EncodedError, encodeFailure } from "./errors.js"
import type { FromWorker, LaneInit, ProgressDelta, ToWorker } from "./protocol.js"
import { chunkUnitWork, type ChunkWork } from "../modes/chunk-work.js"

/**
 * A chunk worker thread (started by pool.ts): reads the config file again, builds the export's source (its own
 * connections), format and sink once, then runs the chunks the main thread sends, one at a time, with the same
 * `runUnit` as the main thread. It reports progress deltas every 200 ms and each chunk's parts; the main thread
 * keeps planning, state, the manifest and `_SUCCESS`.
 */

const PROGRESS_EVERY = "200 millis"

const port = parentPort
if (port === null) throw new Error("engine/lanes/worker.js runs only as a worker thread")
const init = workerData as LaneInit
const post = (message: FromWorker) => port.postMessage(message)

const changed = (what: string) =>
  new ConfigError({
    path: init.configFile,
    message: `the config file changed while export '${init.exportName}' ran: ${what}`,
    hint: "run the export again (with --resume for a checkpointed run)"
  })

/** The export's drivers, built from a fresh read of the config file and checked against the main thread's. */
const openDrivers = Effect.gen(function* () {
  const config = yield* loadConfigFile(init.configFile, { env: init.env })
  const spec = config.exports.find((candidate) => candidate.name === init.exportName)
  if (spec === undefined) return yield* changed(`it no longer defines the export`)
  // The lanes already keep the cores busy: a lane encodes its Parquet parts itself, without a thread of its own.
  const laneEnv = { ...init.env, RIVET_ENCODER_THREAD: "0" }
  const drivers = yield* Layer.build(Layer.merge(sourceLayer(config, init.env, 1), exportLayer(config, spec, laneEnv)))
  const source = Context.get(drivers, SourceDriver)
  const format = Context.get(drivers, FormatDriver)
  const sink = Context.get(drivers, SinkDriver)
  const { expect } = init
  if (sink.uri() !== expect.sinkUri) return yield* changed(`the destination is now ${sink.uri()}`)
  if (format.extension !== expect.extension || format.compression !== expect.compression) {
    return yield* changed(`the format is now ${format.extension} (${format.compression})`)
  }
  if (spec.maxFileSize !== expect.maxFileSize) return yield* changed("max_file_size differs")
  return { spec, source, format, sink }
})

/** Counters `runUnit` updates, and what of them the main thread has been told. */
const makeProgress = () => {
  const progress: ExportProgress = {
    exportName: init.exportName,
    startedAt: Date.now(),
    rows: 0,
    bytes: 0,
    parts: 0,
    retries: 0
  }
  let sent: ProgressDelta = { rows: 0, bytes: 0, parts: 0, retries: 0 }
  const flush = () => {
    const { rows, bytes, parts, retries } = progress
    if (rows === sent.rows && bytes === sent.bytes && parts === sent.parts && retries === sent.retries) return
    post({
      _tag: "Progress",
      rows: rows - sent.rows,
      bytes: bytes - sent.bytes,
      parts: parts - sent.parts,
      retries: retries - sent.retries
    })
    sent = { rows, bytes, parts, retries }
  }
  return { progress, flush }
}

const program = Effect.gen(function* () {
  const inbox = yield* Queue.unbounded<ToWorker>()
  port.on("message", (message: ToWorker) => Queue.unsafeOffer(inbox, message))
  const drivers = yield* openDrivers.pipe(
    Effect.tapErrorCause((cause) =>
      Effect.sync(() => post({ _tag: "StartFailed", error: encodeFailure(init.exportName, cause) }))
    )
  )
  const { progress, flush } = makeProgress()
  yield* Effect.forkScoped(Effect.repeat(Effect.sync(flush), Schedule.spaced(PROGRESS_EVERY)))

  // Schema drift is judged by the main thread, which holds the baseline: ask it, and wait for its answer.
  let schemaAnswer: Deferred.Deferred<EncodedError | undefined> | undefined
  const checkSchema = (schema: BatchSchema) =>
    Effect.gen(function* () {
      const answer = yield* Deferred.make<EncodedError | undefined>()
      schemaAnswer = answer
      post({ _tag: "CheckSchema", schema })
      const error = yield* Deferred.await(answer)
      if (error !== undefined) return yield* Effect.fail(decodeError(init.exportName, error))
    })

  const ctx: UnitContext = {
    ...drivers,
    reporter: {
      started: () => Effect.void,
      tick: () => Effect.void,
      finished: () => Effect.void,
      notice: (_exportName, message) => Effect.sync(() => post({ _tag: "Notice", message })),
      partCommitted: (_exportName, part) => Effect.sync(() => post({ _tag: "PartCommitted", part })),
      intervalMs: 60_000
    },
    progress,
    retry: {
      maxRetries: init.retry.maxRetries,
      initialDelay: Duration.millis(init.retry.initialDelayMs),
      maxDelay: Duration.millis(init.retry.maxDelayMs)
    },
    gates: undefined,
    checkSchema
  }

  // An interrupted chunk (Abort) reports nothing here: the Abort handler answers once its scope has closed. A failed
  // attempt takes back its rows, bytes and parts (runAttempt): the flush sends that as a negative delta, so the
  // main thread, which may run the chunk again, does not count them twice.
  const runChunk = (work: ChunkWork) =>
    Effect.flatMap(Effect.exit(runAttempt(ctx, chunkUnitWork(work))), (exit) =>
      Effect.sync(() => {
        flush()
        post(
          Exit.isSuccess(exit)
            ? { _tag: "Done", outcome: exit.value }
            : { _tag: "Failed", error: encodeFailure(init.exportName, exit.cause) }
        )
      })
    )

  post({ _tag: "Ready", threadId })
  let running: Fiber.RuntimeFiber<void> | undefined
  for (;;) {
    const message = yield* Queue.take(inbox)
    switch (message._tag) {
      case "Run":
        running = yield* Effect.fork(runChunk(message.work))
        break
      case "SchemaChecked":
        if (schemaAnswer !== undefined) yield* Deferred.succeed(schemaAnswer, message.error)
        schemaAnswer = undefined
        break
      case "Abort":
        if (running !== undefined) yield* Fiber.interrupt(running)
        running = undefined
        flush()
        post({ _tag: "Aborted" })
        break
      case "Close":
        if (running !== undefined) yield* Fiber.interrupt(running)
        return
    }
  }
}).pipe(Effect.scoped)

// Once the drivers are released the thread has nothing left to wait for: stop listening so it can end.
Effect.runFork(Effect.provide(program, NodeFileSystem.layer)).addObserver(() => {
  port.removeAllListeners("message")
  port.unref()
})
