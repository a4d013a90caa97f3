import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import { existsSync } from "node:fs"
import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import { Worker } from "node:worker_threads"
import type { Batch, BatchSchema } from "../../../core/batch.js"
import { describeCause, FormatError } from "../../../core/errors.js"
import { handOver } from "../../../core/owned-bytes.js"
import type { PartEncoder, PartInfo } from "../../../core/plugin.js"
import type { EncoderInit, FromEncoder, ToEncoder } from "./protocol.js"
import { AlreadyHandedOver, transferable } from "./transfer.js"

/**
 * Parts encoded on a thread of the export's own: the reading thread decodes the source's rows into batches while
 * the encoder thread turns the previous ones into bytes, so an export uses a second core. A batch's buffers are
 * transferred, without a copy where a builder made them for it alone (transfer.ts), and the encoder thread frees them
 * as soon as they are encoded (core/release-buffers.ts) instead of leaving them to its garbage collector; its replies
 * come back transferred too, and are the runtime's to free once written (core/owned-bytes.ts). At most `IN_FLIGHT`
 * of a part's batches wait for the encoder, which bounds memory and lets backpressure reach the source.
 */
const WORKER_URL = new URL("./encoder-worker.js", import.meta.url)
const IN_FLIGHT = 1
/**
 * The encoder thread's values live in ArrayBuffers outside the JS heap, so a small young generation costs it no
 * time: on bench_2m (Parquet) 8 MiB instead of V8's default saves ~20 MB of peak RSS at the same speed (4 MiB:
 * ~30 MB, a little slower).
 */
const YOUNG_GENERATION_MB = 8

/**
 * Whether parts are encoded on a thread: with a second core, from the built code (run from sources, as in unit
 * tests, there is no .js worker beside this module), and unless `RIVET_ENCODER_THREAD=0` (which chunk worker
 * threads set: their lanes already use the cores).
 */
export const encoderThreadWanted = (env: Readonly<Record<string, string | undefined>>): boolean =>
  env["RIVET_ENCODER_THREAD"] !== "0" && availableParallelism() > 1 && existsSync(fileURLToPath(WORKER_URL))

interface EncoderThread {
  readonly worker: Worker
  readonly parts: Map<number, Queue.Queue<FromEncoder>>
  stopped: string | undefined
  nextPart: number
}

const threadStopped = (format: string, reason: string) =>
  new FormatError({
    format,
    message: `the ${format} encoder thread stopped (${reason})`,
    hint: "run again; if it recurs, set RIVET_ENCODER_THREAD=0 to encode on the reading thread and report the issue"
  })

const startThread = (init: EncoderInit): Effect.Effect<EncoderThread, FormatError> =>
  Effect.try({
    try: () => {
      const worker = new Worker(WORKER_URL, {
        workerData: init,
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB }
      })
      const thread: EncoderThread = { worker, parts: new Map(), stopped: undefined, nextPart: 0 }
      worker.on("message", (message: FromEncoder) => {
        const inbox = thread.parts.get(message.part)
        if (inbox !== undefined) Queue.unsafeOffer(inbox, message)
      })
      const stop = (reason: string) => {
        if (thread.stopped !== undefined) return
        thread.stopped = reason
        for (const [part, inbox] of thread.parts) Queue.unsafeOffer(inbox, stoppedReply(init.format, part, reason))
      }
      worker.on("error", (error) => stop(describeCause(error)))
      worker.on("exit", (code) => stop(`it exited with code ${code}`))
      return thread
    },
    catch: (cause) => threadStopped(init.format, `it could not be started: ${describeCause(cause)}`)
  })

const stoppedReply = (format: string, part: number, reason: string): FromEncoder => {
  const error = threadStopped(format, reason)
  return { _tag: "Failed", part, message: error.message, hint: error.hint }
}

/** Opens a part whose batches are encoded on the export's encoder thread. */
export type ThreadedOpen = (schema: BatchSchema, info: PartInfo | undefined) => Effect.Effect<PartEncoder, FormatError>

/**
 * Opens the export's parts on its encoder thread, which starts when a part reaches its second batch (or when a
 * later part opens) and stops when the export's scope closes (a run that fails or is interrupted included). The
 * export's first part keeps its first batch back: a part that ends there is encoded on this thread with `local`, and
 * no thread is started — starting one (a V8 isolate and the encoder's modules) costs ~0.3 CPU-s, more than a small
 * export spends encoding. A thread that stopped is replaced by the next part.
 */
export const makeEncoderThread = (
  init: EncoderInit,
  scope: Scope.Scope,
  local: Effect.Effect<ThreadedOpen, FormatError>
): ThreadedOpen => {
  const threaded = onThread(init, scope)
  let first = true
  return (schema, info) => {
    if (!first) return threaded(schema, info)
    first = false
    return Effect.succeed(firstBatchHeld(threaded(schema, info), Effect.flatMap(local, (open) => open(schema, info))))
  }
}

/** A part that holds its first batch until it knows whether the part ends there (`local`) or goes on (`threaded`). */
const firstBatchHeld = (
  threaded: Effect.Effect<PartEncoder, FormatError>,
  local: Effect.Effect<PartEncoder, FormatError>
): PartEncoder => {
  let held: Batch | undefined
  let target: PartEncoder | undefined
  const handOff = (encoder: PartEncoder, batches: ReadonlyArray<Batch>) =>
    Effect.gen(function* () {
      target = encoder
      held = undefined
      const out: Array<Uint8Array> = []
      for (const batch of batches) out.push(...(yield* encoder.write(batch)))
      return out
    })
  return {
    write: (batch) =>
      Effect.gen(function* () {
        if (target !== undefined) return yield* target.write(batch)
        if (held === undefined) {
          held = batch
          return []
        }
        return yield* handOff(yield* threaded, [held, batch])
      }),
    finish: Effect.gen(function* () {
      if (target !== undefined) return yield* target.finish
      const encoder = yield* local
      const written = yield* handOff(encoder, held === undefined ? [] : [held])
      return [...written, ...(yield* encoder.finish)]
    })
  }
}

/** Opens parts on the export's encoder thread, started when a part first needs it. */
const onThread = (init: EncoderInit, scope: Scope.Scope): ThreadedOpen => {
  let current: EncoderThread | undefined
  const thread = Effect.suspend(() =>
    current !== undefined && current.stopped === undefined
      ? Effect.succeed(current)
      : Effect.acquireRelease(startThread(init), (started) => Effect.promise(() => started.worker.terminate())).pipe(
          Scope.extend(scope),
          Effect.tap((started) => Effect.sync(() => (current = started)))
        )
  )

  return (schema, info) =>
    Effect.gen(function* () {
      const encoder = yield* thread
      const part = encoder.nextPart++
      const inbox = yield* Queue.unbounded<FromEncoder>()
      encoder.parts.set(part, inbox)
      // A thread that stopped between being handed out and now answers nothing more: this part fails at once.
      if (encoder.stopped !== undefined) Queue.unsafeOffer(inbox, stoppedReply(init.format, part, encoder.stopped))
      const post = (message: ToEncoder, transfer: ReadonlyArray<ArrayBuffer> = []) =>
        Effect.sync(() => encoder.worker.postMessage(message, [...transfer]))
      yield* post({ _tag: "Open", part, schema, info })
      let waiting = 0
      let failure: FormatError | undefined

      const take = (reply: FromEncoder, out: Array<Uint8Array>) => {
        waiting--
        if (reply._tag === "Failed") {
          failure ??= new FormatError({ format: init.format, message: reply.message, ...(reply.hint ? { hint: reply.hint } : {}) })
        } else {
          handOver(reply.chunks)
          out.push(...reply.chunks)
        }
      }
      // Replies that arrived, then more until at most `limit` requests are waiting.
      const collect = (limit: number) =>
        Effect.gen(function* () {
          const out: Array<Uint8Array> = []
          for (const reply of yield* Queue.takeAll(inbox)) take(reply, out)
          while (waiting > limit && failure === undefined) take(yield* Queue.take(inbox), out)
          if (failure !== undefined) {
            encoder.parts.delete(part)
            return yield* Effect.fail(failure)
          }
          return out
        })

      return {
        write: (batch: Batch) =>
          Effect.gen(function* () {
            if (failure !== undefined) return yield* Effect.fail(failure)
            const { columns, transfer } = yield* Effect.try({
              try: () => transferable(batch.columns),
              catch: (cause) =>
                new FormatError({
                  format: init.format,
                  message: cause instanceof AlreadyHandedOver ? cause.message : `could not hand a batch to the encoder thread: ${describeCause(cause)}`,
                  hint: "a transform must emit each batch once; copy the columns of a batch it emits again"
                })
            })
            yield* post({ _tag: "Write", part, columns, rowCount: batch.rowCount, buffers: transfer }, transfer)
            waiting++
            return yield* collect(IN_FLIGHT)
          }),
        finish: Effect.gen(function* () {
          if (failure !== undefined) return yield* Effect.fail(failure)
          yield* post({ _tag: "Finish", part })
          waiting++
          const out = yield* collect(0)
          encoder.parts.delete(part)
          return out
        })
      } satisfies PartEncoder
    })
}
