import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import * as Scope from "effect/Scope"
import type { Batch } from "../../core/batch.js"
import { describeCause, FormatError } from "../../core/errors.js"
import { handOver } from "../../core/owned-bytes.js"
import type { PartEncoder, PartOpener } from "../../core/plugin.js"
import type { EncoderInit, FromEncoder, ToEncoder } from "./protocol.js"
import { type EncoderThread, startThread, stoppedReply } from "./thread.js"
import { AlreadyHandedOver, transferable } from "./transfer.js"

/**
 * At most this many of a part's batches wait for the encoder thread, which bounds memory and lets backpressure reach
 * the source.
 */
const IN_FLIGHT = 1

/** A batch's columns made transferable to the encoder thread, and the buffers to transfer. */
const sendable = (format: string, batch: Batch) =>
  Effect.try({
    try: () => transferable(batch.columns),
    catch: (cause) =>
      new FormatError({
        format,
        message: cause instanceof AlreadyHandedOver ? cause.message : `could not hand a batch to the encoder thread: ${describeCause(cause)}`,
        hint: "a transform must emit each batch once; copy the columns of a batch it emits again"
      })
  })

/**
 * Opens parts on the export's encoder thread, started when a part first needs it and stopped when `scope` closes; a
 * thread that stopped is replaced by the next part. A batch's buffers are transferred, without a copy where a builder
 * made them for it alone (transfer.ts), and the replies come back transferred, the runtime's to free once written
 * (core/owned-bytes.ts). Every part's `finish` is a span, `EncoderThread.finish`, naming the thread that encoded it.
 */
export const onThread = (init: EncoderInit, scope: Scope.Scope): PartOpener => {
  let current: EncoderThread | undefined
  // Batches sent for capped writes, by id: the thread keeps each until its last row is taken (by this part or a later one).
  const sentBatches = new WeakMap<Batch, number>()
  let nextBatch = 0
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

      let cappedRows = 0
      let encodedBy: number | undefined
      const take = (reply: FromEncoder, out: Array<Uint8Array>) => {
        waiting--
        if (reply._tag === "Failed") {
          failure ??= new FormatError({
            format: init.format,
            message: reply.message,
            ...(reply.hint ? { hint: reply.hint } : {}),
            ...(reply.quoted ? { quoted: reply.quoted } : {})
          })
        } else {
          handOver(reply.chunks)
          out.push(...reply.chunks)
          cappedRows = reply.rows ?? 0
          encodedBy = reply.thread ?? encodedBy
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
            const { columns, transfer } = yield* sendable(init.format, batch)
            yield* post({ _tag: "Write", part, columns, rowCount: batch.rowCount, buffers: transfer }, transfer)
            waiting++
            return yield* collect(IN_FLIGHT)
          }),
        // Capped writes wait for their answer (how many rows fit): the next one depends on it. A format without
        // `writeCapped` of its own gets the runtime's slicing on the thread (encoder-worker.ts).
        writeCapped: (batch: Batch, from: number, maxBytes: number) =>
          Effect.gen(function* () {
            if (failure !== undefined) return yield* Effect.fail(failure)
            const earlier = yield* collect(0)
            const id = sentBatches.get(batch)
            if (id === undefined) {
              const { columns, transfer } = yield* sendable(init.format, batch)
              const assigned = nextBatch++
              sentBatches.set(batch, assigned)
              yield* post(
                { _tag: "WriteCapped", part, batch: assigned, columns, rowCount: batch.rowCount, buffers: transfer, from, maxBytes },
                transfer
              )
            } else {
              yield* post({ _tag: "WriteCapped", part, batch: id, columns: undefined, rowCount: batch.rowCount, buffers: [], from, maxBytes })
            }
            waiting++
            const bytes = yield* collect(0)
            return { bytes: [...earlier, ...bytes], rows: cappedRows }
          }),
        finish: Effect.gen(function* () {
          if (failure !== undefined) return yield* Effect.fail(failure)
          yield* post({ _tag: "Finish", part })
          waiting++
          const out = yield* collect(0)
          encoder.parts.delete(part)
          if (encodedBy !== undefined) yield* Effect.annotateCurrentSpan("rivet.encoder.thread_id", encodedBy)
          return out
        }).pipe(Effect.withSpan("EncoderThread.finish", { attributes: { "rivet.format": init.format, "rivet.encoder.part": part } }))
      } satisfies PartEncoder
    })
}
