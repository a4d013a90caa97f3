import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { SinkError } from "../errors.js"
import { invalidKeyReason } from "../keys.js"
import type { SinkDriverShape, UploadHandle } from "../plugin.js"
import { bufferedUpload } from "./buffered.js"
import type { RawUpload, SinkOperation, SinkPrimitives } from "./primitives.js"
import { guardUpload } from "./upload.js"
import { perPart } from "../span-options.js"

/** The object `rivet doctor` writes (and removes) under a destination to prove write access; never listed. */
export const PROBE_NAME = ".rivet_doctor_probe"

const PROBE_BODY = new TextEncoder().encode("ok")

/** The message of a refused key, the same for every sink. */
export const invalidKeyMessage = (key: string, reason: string): string => `invalid key ${JSON.stringify(key)}: ${reason}`

/**
 * A sink driver from a store's primitives. The framework adds what every sink needs and none should write again:
 * key validation before any primitive sees a key, the upload state machine (see `guardUpload`), a buffered
 * `begin` for stores that can only `put`, the doctor probe, the probe left out of `list`, and a span per
 * operation.
 */
export const make = <Receipt>(primitives: SinkPrimitives<Receipt>): SinkDriverShape => {
  const span = (operation: SinkOperation) => `${primitives.spanPrefix}.${operation}`
  const checkKey = (operation: SinkOperation, key: string): Effect.Effect<void, SinkError> => {
    const reason = invalidKeyReason(key) ?? primitives.keyProblem?.(key)
    return reason === undefined
      ? Effect.void
      : Effect.fail(primitives.usageError({ operation, key, message: invalidKeyMessage(key, reason), reason: "Unknown" }))
  }

  const put = (key: string, bytes: Uint8Array, contentType: string) =>
    Effect.zipRight(checkKey("put", key), primitives.put(key, bytes, contentType)).pipe(Effect.withSpan(span("put"), perPart))

  const guard = <R>(key: string, raw: RawUpload<R>): UploadHandle =>
    guardUpload(raw, {
      key,
      blockSize: primitives.capabilities.blockSize,
      rules: primitives.uploads ?? {},
      spanPrefix: primitives.spanPrefix,
      fail: (operation, message, options) =>
        primitives.usageError({
          operation,
          key,
          message,
          reason: options?.conflict === true ? "Conflict" : "Unknown",
          hint: options?.hint
        })
    })
  const { begin: beginRaw } = primitives
  const open = (key: string, contentType: string): Effect.Effect<UploadHandle, SinkError> =>
    beginRaw === undefined
      ? Effect.sync(() => guard(key, bufferedUpload((bytes) => primitives.put(key, bytes, contentType))))
      : Effect.map(beginRaw(key, contentType), (raw) => guard(key, raw))

  const begin = (key: string, contentType: string) =>
    Effect.zipRight(checkKey("begin", key), open(key, contentType)).pipe(Effect.withSpan(span("begin"), perPart))

  const probe = primitives.probe
  const check = Effect.gen(function* () {
    if (primitives.check !== undefined) yield* primitives.check
    if (probe === false) return
    yield* primitives.put(PROBE_NAME, PROBE_BODY, "text/plain")
    const removed = yield* Effect.either(probe.remove(PROBE_NAME))
    if (removed._tag === "Right") return
    const { message, hint } = removed.left
    return { notes: [`the probe object ${primitives.uri(PROBE_NAME)} was written but not removed (${message}).${hint === undefined ? "" : ` ${hint}`} Remove it by hand; no run lists or reads it.`] }
  }).pipe(Effect.withSpan(span("check")))

  const { list, read, readRange, create, sweep, pendingUploads } = primitives
  return {
    label: primitives.label,
    uri: primitives.uri,
    capabilities: primitives.capabilities,
    check,
    put,
    begin,
    ...(list === undefined
      ? {}
      : {
          list: list.pipe(
            Effect.map((objects) => objects.filter((object) => object.key !== PROBE_NAME)),
            Effect.withSpan(span("list"))
          )
        }),
    ...(read === undefined
      ? {}
      : {
          read: (key: string) =>
            Stream.unwrap(Effect.as(checkKey("read", key), read(key))).pipe(Stream.withSpan(span("read")))
        }),
    ...(readRange === undefined
      ? {}
      : {
          readRange: (key: string, offset: number, length: number) =>
            Effect.zipRight(checkKey("readRange", key), readRange(key, offset, length)).pipe(Effect.withSpan(span("readRange")))
        }),
    ...(create === undefined
      ? {}
      : {
          create: (key: string, bytes: Uint8Array, contentType: string) =>
            Effect.zipRight(checkKey("create", key), create(key, bytes, contentType)).pipe(Effect.withSpan(span("create")))
        }),
    ...(sweep === undefined ? {} : { sweep: sweep.pipe(Effect.withSpan(span("sweep"))) }),
    ...(pendingUploads === undefined ? {} : { pendingUploads })
  }
}
