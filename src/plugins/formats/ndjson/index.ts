import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { BatchSchema } from "../../../core/batch.js"
import { defineFormat, FormatDriver, type FormatDriverShape } from "../../../core/plugin.js"
import { countTextRows, ndjsonRowCounter } from "../text/count-rows.js"
import { gzipPart } from "../text/gzip.js"
import { encoderThreadWanted, makeEncoderThread } from "../thread/encoder-thread.js"
import { NdjsonConfig } from "./config.js"
import { ndjsonFields, ndjsonPartOpener } from "./encoder.js"

/**
 * The NDJSON format driver for one export's config. Rows are encoded on a thread of the export's own when `env`
 * allows it (see `encoderThreadWanted`), compressed on the reading side; the thread ends with the scope.
 */
export const makeNdjsonDriver = (
  config: NdjsonConfig,
  env: Readonly<Record<string, string | undefined>> = {}
): Effect.Effect<FormatDriverShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const open = encoderThreadWanted(env)
      ? makeEncoderThread({ format: "ndjson", config }, yield* Effect.scope, Effect.succeed(ndjsonPartOpener))
      : ndjsonPartOpener
    return {
      extension: config.compression === "gzip" ? "ndjson.gz" : "ndjson",
      contentType: "application/x-ndjson",
      compression: config.compression,
      countRows: countTextRows("ndjson", ndjsonRowCounter),
      validate: Effect.fn("NdjsonFormat.validate")(function* (schema: BatchSchema) {
        yield* ndjsonFields(schema)
      }),
      open: Effect.fn("NdjsonFormat.open")(function* (schema: BatchSchema) {
        yield* ndjsonFields(schema)
        const encoder = yield* open(schema, undefined)
        return config.compression === "gzip" ? yield* gzipPart(encoder, "ndjson") : encoder
      })
    }
  })

/** `format: ndjson` — one JSON object per row, optionally gzip-compressed. */
export default defineFormat({
  type: "ndjson",
  description: "Newline-delimited JSON: one object per row, NULL as null; optional gzip.",
  config: NdjsonConfig,
  make: (config, context) => Layer.scoped(FormatDriver, makeNdjsonDriver(config, context.env))
})
