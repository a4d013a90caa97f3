import * as Effect from "effect/Effect"
import type { SinkError } from "../errors.js"
import type { RawUpload } from "./primitives.js"

/** The bytes of `parts`, one after another. */
export const concatParts = (parts: ReadonlyArray<Uint8Array>, byteLength: number): Uint8Array => {
  const out = new Uint8Array(byteLength)
  let offset = 0
  for (const part of parts) {
    out.set(part, offset)
    offset += part.length
  }
  return out
}

/**
 * The upload of a store that can only write whole objects: every part is kept in memory (its receipt is a copy of
 * its bytes) and `complete` writes them with one `put`. Nothing reaches the store before `complete`, so `abort`
 * has nothing to remove.
 */
export const bufferedUpload = (
  put: (bytes: Uint8Array) => Effect.Effect<void, SinkError>
): RawUpload<Uint8Array> => ({
  writePart: (_index, bytes) => Effect.sync(() => bytes.slice()),
  complete: (parts, byteLength) => Effect.suspend(() => put(concatParts(parts, byteLength))),
  abort: Effect.void
})
