import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { BatchSchema } from "../../../core/batch.js"
import { defineFormat, FormatDriver, type FormatDriverShape } from "../../../core/plugin.js"
import { countTextRows, ndjsonRowCounter } from "../text/count-rows.js"
import { textParts } from "../text/parts.js"
import { NdjsonConfig } from "./config.js"
import { ndjsonFields, ndjsonPartOpener } from "./encoder.js"

/** The NDJSON format driver for one export's config: one JSON object per row, optionally gzipped. */
export const makeNdjsonDriver = (config: NdjsonConfig): Effect.Effect<FormatDriverShape> =>
  Effect.sync(() => {
    const open = textParts("ndjson", ndjsonPartOpener, config.compression)
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
        return yield* open(schema, undefined)
      })
    }
  })

/** `format: ndjson` — one JSON object per row, optionally gzip-compressed. */
export default defineFormat({
  type: "ndjson",
  description: "Newline-delimited JSON: one object per row, NULL as null; optional gzip.",
  config: NdjsonConfig,
  make: (config) => Layer.effect(FormatDriver, makeNdjsonDriver(config)),
  // Its own module, so that the CLI's bundle has it as an entry of that name (scripts/bundle-cli.mjs).
  encoderThread: {
    module: new URL("./ndjson-parts.js", import.meta.url),
    factory: "ndjsonParts",
    freesBatchesAfterWrite: true,
    ownsReturnedBytes: true
  }
})
