import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import { parentPort, workerData } from "node:worker_threads"
import { describeCause, FormatError } from "../../runtime/errors.js"
import type { BatchSchema } from "../../runtime/batch.js"
import type { PartEncoder } from "../../runtime/plugin.js"
import { type Codec, makeCodec } from "./compressors.js"
import { rowGroupLimits } from "./config.js"
import { makePartEncoder } from "./encoder.js"
import type { EncoderInit, FromEncoder, ToEncoder } from "./worker-protocol.js"

/**
 * The Parquet encoder thread of an export (see worker-encoder.ts): it encodes the parts whose batches the reading
 * thread posts, one message at a time in arrival order, and posts the bytes back (transferred, not copied).
 */
const port = parentPort!
const { config } = workerData as EncoderInit
const limits = rowGroupLimits(config)
const codec = Effect.runPromise(Effect.either(makeCodec(config)))
type Part = { readonly encoder: PartEncoder; readonly schema: BatchSchema } | { readonly error: unknown }
const parts = new Map<number, Part>()

const reply = (message: FromEncoder) =>
  port.postMessage(message, message._tag === "Bytes" ? message.chunks.map((chunk) => chunk.buffer as ArrayBuffer) : [])

const failed = (part: number, error: unknown): FromEncoder =>
  error instanceof FormatError
    ? { _tag: "Failed", part, message: error.message, hint: error.hint }
    : { _tag: "Failed", part, message: `could not start a Parquet part: ${describeCause(error)}`, hint: undefined }

const run = (part: number, step: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>) => {
  const exit = Effect.runSyncExit(step)
  if (Exit.isSuccess(exit)) return reply({ _tag: "Bytes", part, chunks: exit.value })
  parts.delete(part)
  reply(failed(part, Cause.squash(exit.cause)))
}

const open = (codec: Codec, message: Extract<ToEncoder, { _tag: "Open" }>): Part => {
  try {
    const settings = { codec, rowGroupSize: limits.rows, rowGroupBytes: limits.bytes }
    return { encoder: makePartEncoder(message.schema, settings, message.info), schema: message.schema }
  } catch (error) {
    return { error }
  }
}

const handle = async (message: ToEncoder): Promise<void> => {
  const ready = await codec
  if (message._tag === "Open") {
    parts.set(message.part, ready._tag === "Left" ? { error: ready.left } : open(ready.right, message))
    return
  }
  const part = parts.get(message.part)
  if (part === undefined || "error" in part) {
    parts.delete(message.part)
    return reply(failed(message.part, part?.error ?? new Error("the part was not opened")))
  }
  if (message._tag === "Write") {
    return run(message.part, part.encoder.write({ schema: part.schema, columns: message.columns, rowCount: message.rowCount }))
  }
  parts.delete(message.part)
  run(message.part, part.encoder.finish)
}

let queue = Promise.resolve()
port.on("message", (message: ToEncoder) => {
  queue = queue.then(() => handle(message))
})
