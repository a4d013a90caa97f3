import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { parentPort, workerData } from "node:worker_threads"
import type { Batch, BatchSchema } from "../../../core/batch.js"
import { describeCause, FormatError } from "../../../core/errors.js"
import type { PartEncoder } from "../../../core/plugin.js"
import { csvPartOpener } from "../csv/encoder.js"
import { ndjsonPartOpener } from "../ndjson/encoder.js"
import { parquetPartOpener } from "../parquet/driver.js"
import type { EncoderInit, FromEncoder, ToEncoder } from "./protocol.js"
import { releaseBuffers } from "../../../core/release-buffers.js"
import type { ThreadedOpen } from "./encoder-thread.js"

/**
 * An export's encoder thread (see encoder-thread.ts): it encodes the parts whose batches the reading thread posts,
 * one message at a time in arrival order, and posts the bytes back (transferred, not copied: every encoder here
 * hands over buffers it no longer writes to).
 */
const port = parentPort!
const init = workerData as EncoderInit

// The buffers of each batch not encoded yet; they arrived transferred, so this thread frees them once they are.
const owned = new WeakMap<Batch, ReadonlyArray<ArrayBuffer>>()
const release = (batch: Batch) => {
  const buffers = owned.get(batch)
  owned.delete(batch)
  if (buffers !== undefined) releaseBuffers(buffers)
}

/** The format's part opener, and whether its encoders hold batches past `write` (and release them themselves). */
const opener = (): Effect.Effect<{ readonly open: ThreadedOpen; readonly holdsBatches: boolean }, FormatError> => {
  switch (init.format) {
    case "parquet":
      return Effect.map(parquetPartOpener(init.config, release), (open) => ({ open, holdsBatches: true }))
    case "csv":
      return Effect.succeed({ open: csvPartOpener, holdsBatches: false })
    case "ndjson":
      return Effect.succeed({ open: ndjsonPartOpener, holdsBatches: false })
  }
}
const ready = Effect.runPromise(Effect.either(opener()))
type Part =
  | { readonly encoder: PartEncoder; readonly schema: BatchSchema; readonly holdsBatches: boolean }
  | { readonly error: unknown }
const parts = new Map<number, Part>()

const reply = (message: FromEncoder) =>
  port.postMessage(message, message._tag === "Bytes" ? [...new Set(message.chunks.map((chunk) => chunk.buffer as ArrayBuffer))] : [])

const failed = (part: number, error: unknown): FromEncoder =>
  error instanceof FormatError
    ? { _tag: "Failed", part, message: error.message, hint: error.hint }
    : { _tag: "Failed", part, message: `could not encode a ${init.format} part: ${describeCause(error)}`, hint: undefined }

// `replied` runs once the bytes are posted (a chunk that is a view of a batch's buffer went with them).
const run = async (part: number, step: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>, replied?: () => void) => {
  const exit = await Effect.runPromiseExit(step)
  if (Exit.isSuccess(exit)) {
    reply({ _tag: "Bytes", part, chunks: exit.value })
    return replied?.()
  }
  parts.delete(part)
  reply(failed(part, Cause.squash(exit.cause)))
}

const handle = async (message: ToEncoder): Promise<void> => {
  const open = await ready
  if (message._tag === "Open") {
    if (open._tag === "Left") return void parts.set(message.part, { error: open.left })
    const exit = await Effect.runPromiseExit(open.right.open(message.schema, message.info))
    parts.set(
      message.part,
      Exit.isSuccess(exit)
        ? { encoder: exit.value, schema: message.schema, holdsBatches: open.right.holdsBatches }
        : { error: Cause.squash(exit.cause) }
    )
    return
  }
  const part = parts.get(message.part)
  if (part === undefined || "error" in part) {
    parts.delete(message.part)
    return reply(failed(message.part, part?.error ?? new Error("the part was not opened")))
  }
  if (message._tag === "Write") {
    const batch: Batch = { schema: part.schema, columns: message.columns, rowCount: message.rowCount }
    owned.set(batch, message.buffers)
    return run(message.part, part.encoder.write(batch), part.holdsBatches ? undefined : () => release(batch))
  }
  parts.delete(message.part)
  return run(message.part, part.encoder.finish)
}

let queue = Promise.resolve()
port.on("message", (message: ToEncoder) => {
  queue = queue.then(() => handle(message))
})
