import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { parentPort, threadId, workerData } from "node:worker_threads"
import type { Batch, BatchSchema } from "../../core/batch.js"
import { FormatError } from "../../core/errors.js"
import type { PartEncoder, PartOpener } from "../../core/plugin.js"
import { releaseBuffers } from "../../core/release-buffers.js"
import { writeWithinCap } from "../capped-write.js"
import { failureReply, loadOpener, sendable } from "./worker-support.js"
import type { EncoderInit, FromEncoder, ToEncoder } from "./protocol.js"

/**
 * An export's encoder thread (see thread.ts): it loads the format's part encoders from the module the format named
 * (`EncoderThreadSupport`), encodes the parts whose batches the reading thread posts, one message at a time in
 * arrival order, and posts the bytes back — transferred, copied first unless the format owns them.
 */
const port = parentPort!
const init = workerData as EncoderInit

// The buffers of each batch not freed yet; they arrived transferred, so this thread frees them once they are encoded.
const owned = new WeakMap<Batch, ReadonlyArray<ArrayBuffer>>()
const release = (batch: Batch) => {
  const buffers = owned.get(batch)
  owned.delete(batch)
  if (buffers !== undefined) releaseBuffers(buffers)
}
const releaseAfterWrite = (batch: Batch) => {
  if (init.freesBatchesAfterWrite) release(batch)
}

const ready: Promise<Exit.Exit<PartOpener, unknown>> = Effect.runPromiseExit(
  loadOpener(init, { releaseBatch: release, releaseBuffers })
)

interface OpenPart {
  readonly encoder: PartEncoder
  readonly schema: BatchSchema
  /** What `writeWithinCap` needs of a format without `writeCapped`, as the reading thread counts it. */
  readonly fill: { bytes: number; rows: number }
}
type Part = OpenPart | { readonly error: unknown }
const parts = new Map<number, Part>()

const reply = (message: FromEncoder) => {
  if (message._tag !== "Bytes") return port.postMessage(message)
  const { chunks, transfer } = sendable(message.chunks, init.ownsReturnedBytes)
  port.postMessage({ ...message, chunks }, [...transfer])
}

const failed = (part: number, error: unknown): FromEncoder => failureReply(init.format, part, error)

const counted = (fill: OpenPart["fill"], chunks: ReadonlyArray<Uint8Array>) => {
  for (const chunk of chunks) fill.bytes += chunk.byteLength
  return chunks
}

// `replied` runs once the bytes are posted (a chunk that is a view of a batch's buffer went with them).
const run = async (part: number, open: OpenPart, step: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>, replied?: () => void) => {
  const exit = await Effect.runPromiseExit(step)
  if (Exit.isSuccess(exit)) {
    reply({ _tag: "Bytes", part, chunks: counted(open.fill, exit.value) })
    return replied?.()
  }
  parts.delete(part)
  reply(failed(part, Cause.squash(exit.cause)))
}

// Batches written under a cap whose last rows are not taken yet: the next part continues them.
const heldBatches = new Map<number, Batch>()

const writeCapped = async (message: Extract<ToEncoder, { _tag: "WriteCapped" }>, part: OpenPart) => {
  let batch = heldBatches.get(message.batch)
  if (batch === undefined && message.columns !== undefined) {
    batch = { schema: part.schema, columns: message.columns, rowCount: message.rowCount }
    owned.set(batch, message.buffers)
    heldBatches.set(message.batch, batch)
  }
  // A format without `writeCapped` gets the runtime's slicing here, from the part's bytes and rows so far.
  const exit = await Effect.runPromiseExit(
    batch === undefined
      ? Effect.fail(new FormatError({ format: init.format, message: "a capped write reached the encoder thread without its batch" }))
      : Effect.suspend(() => writeWithinCap(part.encoder, batch!, message.from, message.maxBytes, part.fill, init.format))
  )
  if (Exit.isFailure(exit)) {
    heldBatches.delete(message.batch)
    parts.delete(message.part)
    return reply(failed(message.part, Cause.squash(exit.cause)))
  }
  part.fill.rows += exit.value.rows
  reply({ _tag: "Bytes", part: message.part, chunks: counted(part.fill, exit.value.bytes), rows: exit.value.rows })
  if (message.from + exit.value.rows < message.rowCount) return
  heldBatches.delete(message.batch)
  releaseAfterWrite(batch!)
}

const handle = async (message: ToEncoder): Promise<void> => {
  const opener = await ready
  if (message._tag === "Open") {
    if (Exit.isFailure(opener)) return void parts.set(message.part, { error: Cause.squash(opener.cause) })
    const exit = await Effect.runPromiseExit(Effect.suspend(() => opener.value(message.schema, message.info)))
    parts.set(
      message.part,
      Exit.isSuccess(exit) ? { encoder: exit.value, schema: message.schema, fill: { bytes: 0, rows: 0 } } : { error: Cause.squash(exit.cause) }
    )
    return
  }
  const part = parts.get(message.part)
  if (part === undefined || "error" in part) {
    parts.delete(message.part)
    return reply(failed(message.part, part?.error ?? new Error("the part was not opened")))
  }
  if (message._tag === "WriteCapped") return writeCapped(message, part)
  if (message._tag === "Write") {
    const batch: Batch = { schema: part.schema, columns: message.columns, rowCount: message.rowCount }
    owned.set(batch, message.buffers)
    part.fill.rows += batch.rowCount
    return run(message.part, part, Effect.suspend(() => part.encoder.write(batch)), () => releaseAfterWrite(batch))
  }
  parts.delete(message.part)
  const exit = await Effect.runPromiseExit(Effect.suspend(() => part.encoder.finish))
  reply(
    Exit.isSuccess(exit)
      ? { _tag: "Bytes", part: message.part, chunks: exit.value, thread: threadId }
      : failed(message.part, Cause.squash(exit.cause))
  )
}

let queue = Promise.resolve()
port.on("message", (message: ToEncoder) => {
  queue = queue.then(() => handle(message))
})
