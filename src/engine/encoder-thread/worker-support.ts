import * as Effect from "effect/Effect"
import * as Predicate from "effect/Predicate"
import { describeCause, FormatError } from "../../core/errors.js"
import type { EncoderThreadHooks, PartEncoderFactory, PartOpener } from "../../core/plugin.js"
import type { EncoderInit, FromEncoder } from "./protocol.js"

/**
 * The format's part opener on the encoder thread: its module imported, its factory called with the export's config.
 * A failure here fails every part the thread is given, with this message.
 */
export const loadOpener = (init: EncoderInit, hooks: EncoderThreadHooks): Effect.Effect<PartOpener, FormatError> =>
  Effect.gen(function* () {
    const where = `the ${init.format} format's encoder module (${init.module})`
    const module = yield* Effect.tryPromise({
      try: () => import(init.module) as Promise<Record<string, unknown>>,
      catch: (cause) =>
        new FormatError({
          format: init.format,
          message: `the encoder thread could not load ${where}: ${describeCause(cause)}`,
          hint: "the format's encoderThread.module must name a built ES module beside the plugin; run with --no-encoder-thread meanwhile"
        })
    })
    const factory = module[init.factory]
    if (typeof factory !== "function") {
      return yield* new FormatError({
        format: init.format,
        message: `${where} has no function export '${init.factory}'`,
        hint: "the format's encoderThread.factory must name the module's PartEncoderFactory export (default: the default export)"
      })
    }
    // A function found by name in a module the format declared: the declaration is what types it.
    const make = factory as PartEncoderFactory<unknown>
    return yield* Effect.suspend(() => make(init.config, hooks))
  })

/**
 * A reply's chunks as they are posted, and the buffers to transfer with them: as they are when the format owns them,
 * else copied into one buffer of the reply's own (a chunk may view memory the encoder writes to again).
 */
export const sendable = (
  chunks: ReadonlyArray<Uint8Array>,
  owned: boolean
): { readonly chunks: ReadonlyArray<Uint8Array>; readonly transfer: ReadonlyArray<ArrayBuffer> } => {
  if (owned) return { chunks, transfer: [...new Set(chunks.map((chunk) => chunk.buffer as ArrayBuffer))] }
  let length = 0
  for (const chunk of chunks) length += chunk.byteLength
  if (length === 0) return { chunks: [], transfer: [] }
  const copy = new Uint8Array(length)
  let at = 0
  for (const chunk of chunks) {
    copy.set(chunk, at)
    at += chunk.byteLength
  }
  return { chunks: [copy], transfer: [copy.buffer] }
}

/**
 * The reply for a part that failed. A format plugin's errors may come from its own copy of Rivet's modules, so a
 * FormatError is recognised by its tag and fields rather than its class.
 */
export const failureReply = (format: string, part: number, error: unknown): FromEncoder => {
  if (Predicate.isTagged(error, "FormatError") && Predicate.hasProperty(error, "message") && typeof error.message === "string") {
    const hint = Predicate.hasProperty(error, "hint") && typeof error.hint === "string" ? error.hint : undefined
    const listed: unknown = Predicate.hasProperty(error, "quoted") ? error.quoted : undefined
    const quoted = Array.isArray(listed) && listed.every(Predicate.isString) ? listed : undefined
    return { _tag: "Failed", part, message: error.message, hint, quoted }
  }
  return { _tag: "Failed", part, message: `could not encode a ${format} part: ${describeCause(error)}`, hint: undefined }
}
