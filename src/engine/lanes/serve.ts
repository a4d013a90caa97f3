import type * as FileSystem from "@effect/platform/FileSystem"
import * as WorkerRunner from "@effect/platform/WorkerRunner"
import * as Cause from "effect/Cause"
import * as Context from "effect/Context"
import * as Deferred from "effect/Deferred"
import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Mailbox from "effect/Mailbox"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import * as Stream from "effect/Stream"
import * as Tracer from "effect/Tracer"
import { resolveMaskKey } from "../masking.js"
import type { BatchSchema } from "../../core/batch.js"
import { ConfigError, type RivetError } from "../../core/errors.js"
import type { RivetConfig } from "../../config/model.js"
import { exportLayer, sourceLayer } from "../layers.js"
import { runAttempt } from "../modes/attempt.js"
import type { UnitContext } from "../modes/unit-context.js"
import { FormatDriver, SinkDriver, SourceDriver } from "../../core/plugin.js"
import { makeLiveProgress } from "../live-progress.js"
import { laneError } from "./errors.js"
import { type ChunkEvent, type LaneInit, LaneRequest, type TraceParent } from "./protocol.js"
import { telemetryLayer } from "../telemetry/layer.js"
import { telemetrySettings } from "../telemetry/settings.js"
import { chunkUnitWork, type ChunkWork } from "../modes/chunk-work.js"

/**
 * What a chunk worker thread (started by pool.ts; its entry is src/lanes-worker.ts) serves: it reads the config file again, builds the export's source (its own
 * connections), format and sink once, then runs the chunks the main thread sends with the same `runUnit` as the
 * main thread — one reading at a time, the next one sent as soon as the one before is read (the chunks before it
 * may still be finishing their last parts). It reports each chunk's totals every 200 ms and its parts; the main thread keeps
 * planning, state, the manifest and `_SUCCESS`.
 */

const PROGRESS_EVERY = "200 millis"

/** Loads the run's config file again in the thread (the edge's config loader: the engine knows no plugin). */
export type LoadConfigFile = (
  file: string,
  env: Readonly<Record<string, string | undefined>>
) => Effect.Effect<RivetConfig, ConfigError, FileSystem.FileSystem>

/** A lane's drivers, and what it needs to run chunks with them. */
class Lane extends Context.Tag("rivet/engine/lanes/Lane")<
  Lane,
  {
    readonly run: (work: ChunkWork, parent: TraceParent | undefined) => Stream.Stream<ChunkEvent, RivetError>
    /** Delivers the main thread's verdict on the running chunk's schema. */
    readonly answerSchema: (error: RivetError | undefined) => Effect.Effect<void>
  }
>() {}

/** The export's drivers, built from a fresh read of the config file and checked against the main thread's. */
const openDrivers = (init: LaneInit, loadConfig: LoadConfigFile) =>
  Effect.gen(function* () {
    const changed = (what: string) =>
      new ConfigError({
        path: init.configFile,
        message: `the config file changed while export '${init.exportName}' ran: ${what}`,
        hint: "run the export again (with --resume for a checkpointed run)"
      })
    const config = yield* loadConfig(init.configFile, init.env)
    const spec = config.exports.find((candidate) => candidate.name === init.exportName)
    if (spec === undefined) return yield* changed(`it no longer defines the export`)
    // The lanes already keep the cores busy: a lane encodes its parts itself, without an encoder thread of its own.
    const drivers = yield* Layer.build(
      Layer.merge(sourceLayer(config, init.env, 1), exportLayer(config, spec, init.env, { encoderThread: false }))
    )
    const source = Context.get(drivers, SourceDriver)
    const format = Context.get(drivers, FormatDriver)
    const sink = Context.get(drivers, SinkDriver)
    const { expect } = init
    if (sink.uri() !== expect.sinkUri) return yield* changed(`the destination is now ${sink.uri()}`)
    if (format.extension !== expect.extension || format.compression !== expect.compression) {
      return yield* changed(`the format is now ${format.extension} (${format.compression})`)
    }
    if (spec.maxFileSize !== expect.maxFileSize) return yield* changed("max_file_size differs")
    const maskKey = yield* resolveMaskKey(config, init.env)
    return { drivers: { spec, source, format, sink, maskKey }, telemetry: config.telemetry }
  })

/**
 * The chunk's progress in this thread, and a flush that sends its totals so far to the main thread when they
 * changed: values, which the main thread keeps as the running chunk's (dropping them if the chunk fails).
 */
const chunkProgress = (exportName: string, emit: (event: ChunkEvent) => void) =>
  Effect.map(makeLiveProgress(exportName, 0), (progress) => {
    let sent = ""
    const flush = Effect.flatMap(progress.snapshot, ({ rows, bytes, parts, retries }) =>
      Effect.sync(() => {
        const totals = { rows, bytes, parts, retries }
        const text = JSON.stringify(totals)
        if (text === sent) return
        sent = text
        emit({ _tag: "Progress", ...totals })
      })
    )
    return { progress, flush }
  })

const openLane = (init: LaneInit, loadConfig: LoadConfigFile) =>
  Effect.gen(function* () {
    const { drivers, telemetry: telemetryConfig } = yield* openDrivers(init, loadConfig)
    const retry = {
      maxRetries: init.retry.maxRetries,
      initialDelay: Duration.millis(init.retry.initialDelayMs),
      maxDelay: Duration.millis(init.retry.maxDelayMs)
    }
    const schemaAnswer = yield* Ref.make(Option.none<Deferred.Deferred<RivetError | undefined>>())

    // The lane's own tracer (traces only: its counts reach the main thread's metrics as values), flushed when it closes.
    const telemetry = telemetrySettings(init.env, telemetryConfig)
      ? yield* Layer.toRuntime(telemetryLayer(init.env, { metrics: false, config: telemetryConfig }))
      : undefined
    const traced = <A, E>(effect: Effect.Effect<A, E>, parent: TraceParent | undefined) =>
      telemetry && parent
        ? Effect.provide(Effect.withParentSpan(effect, Tracer.externalSpan(parent)), telemetry)
        : effect
    const run = (work: ChunkWork, parent: TraceParent | undefined) =>
      Stream.unwrapScoped(
        Effect.gen(function* () {
          const events = yield* Mailbox.make<ChunkEvent, RivetError>()
          const emit = (event: ChunkEvent) => void events.unsafeOffer(event)
          const { progress, flush } = yield* chunkProgress(init.exportName, emit)

          // Schema drift is judged by the main thread, which holds the baseline: ask it, and wait for its answer.
          const checkSchema = (schema: BatchSchema) =>
            Effect.gen(function* () {
              const answer = yield* Deferred.make<RivetError | undefined>()
              yield* Ref.set(schemaAnswer, Option.some(answer))
              emit({ _tag: "CheckSchema", schema })
              const error = yield* Deferred.await(answer)
              if (error !== undefined) return yield* Effect.fail(error)
            })

          const ctx: UnitContext = {
            ...drivers,
            reporter: {
              started: () => Effect.void,
              tick: () => Effect.void,
              finished: () => Effect.void,
              notice: (_exportName, message) => Effect.sync(() => emit({ _tag: "Notice", message })),
              partCommitted: (_exportName, part) => Effect.sync(() => emit({ _tag: "PartCommitted", part })),
              intervalMs: 60_000
            },
            progress,
            retry,
            gates: undefined,
            checkSchema,
            lane: `lane-${init.lane}`
          }

          const onSourceEnd = () => Effect.sync(() => emit({ _tag: "SourceEnded" }))
          yield* Effect.forkScoped(Effect.repeat(flush, Schedule.spaced(PROGRESS_EVERY)))
          // An interrupted chunk (the main thread interrupted the request) reports nothing: its scope closes.
          yield* Effect.forkScoped(
            Effect.flatMap(Effect.exit(traced(runAttempt(ctx, { ...chunkUnitWork(work), onSourceEnd }), parent)).pipe(Effect.tap(() => flush)), (exit) => {
              if (Exit.isSuccess(exit)) {
                emit({ _tag: "Done", outcome: exit.value })
                return events.end
              }
              return Cause.isInterruptedOnly(exit.cause)
                ? Effect.void
                : events.fail(laneError(init.exportName, exit.cause))
            })
          )
          return Mailbox.toStream(events)
        })
      )

    const answerSchema = (error: RivetError | undefined) =>
      Effect.flatMap(Ref.getAndSet(schemaAnswer, Option.none()), (pending) =>
        Option.isSome(pending) ? Deferred.succeed(pending.value, error) : Effect.void
      )

    return Lane.of({ run, answerSchema })
  })

/**
 * The lane's request handlers. The thread's entry launches them; they end when the main thread closes the thread,
 * which interrupts the running chunk and releases the drivers.
 */
export const laneRunner = (loadConfig: LoadConfigFile) =>
  WorkerRunner.layerSerialized(LaneRequest, {
    InitialMessage: ({ init }) =>
      Layer.scoped(Lane, openLane(init, loadConfig)).pipe(
        Layer.catchAllCause((cause) => Layer.fail(laneError(init.exportName, cause)))
      ),
    RunChunk: ({ parent, work }) => Stream.unwrap(Effect.map(Lane, (lane) => lane.run(work, parent))),
    SchemaChecked: ({ error }) => Effect.flatMap(Lane, (lane) => lane.answerSchema(error))
  })
