import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Batch } from "../../core/batch.js"
import type { FormatError } from "../../core/errors.js"
import type { PartEncoder, PartOpener } from "../../core/plugin.js"
import { onThread } from "./parts.js"
import type { EncoderInit } from "./protocol.js"

/**
 * Opens the export's parts on its encoder thread, which starts when a part reaches its second batch (or when a
 * later part opens) and stops when the export's scope closes (a run that fails or is interrupted included). The
 * export's first part keeps its first batch back: a part that ends there is encoded on this thread with `local` (the
 * format's own `open`), and no thread is started — starting one (a V8 isolate and the encoder's modules) costs
 * ~0.3 CPU-s, more than a small export spends encoding.
 */
export const makeEncoderThread = (init: EncoderInit, scope: Scope.Scope, local: PartOpener): PartOpener => {
  const threaded = onThread(init, scope)
  let first = true
  return (schema, info) => {
    if (!first) return threaded(schema, info)
    first = false
    return Effect.succeed(firstBatchHeld(threaded(schema, info), Effect.suspend(() => local(schema, info))))
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
    // A capped part is written batch by batch as it goes: no first batch is held back.
    writeCapped: (batch, from, maxBytes) =>
      Effect.gen(function* () {
        if (target === undefined) yield* handOff(yield* threaded, held === undefined ? [] : [held])
        return yield* target!.writeCapped!(batch, from, maxBytes)
      }),
    finish: Effect.gen(function* () {
      if (target !== undefined) return yield* target.finish
      const encoder = yield* local
      const written = yield* handOff(encoder, held === undefined ? [] : [held])
      return [...written, ...(yield* encoder.finish)]
    })
  }
}
