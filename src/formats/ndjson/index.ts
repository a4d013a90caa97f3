import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { BatchSchema } from "../../runtime/batch.js"
import { defineFormat, FormatDriver, type FormatDriverShape } from "../../runtime/plugin.js"
import { countTextRows, ndjsonRowCounter } from "../text/count-rows.js"
import { gzipPart } from "../text/gzip.js"
import { NdjsonConfig } from "./config.js"
import { makeNdjsonEncoder, ndjsonFields } from "./encoder.js"

/** The NDJSON format driver for one export's config. */
export const makeNdjsonDriver = (config: NdjsonConfig): FormatDriverShape => ({
  extension: config.compression === "gzip" ? "ndjson.gz" : "ndjson",
  contentType: "application/x-ndjson",
  compression: config.compression,
  countRows: countTextRows("ndjson", ndjsonRowCounter),
  validate: Effect.fn("NdjsonFormat.validate")(function* (schema: BatchSchema) {
    yield* ndjsonFields(schema)
  }),
  open: Effect.fn("NdjsonFormat.open")(function* (schema: BatchSchema) {
    const encoder = makeNdjsonEncoder(schema, yield* ndjsonFields(schema))
    return config.compression === "gzip" ? yield* gzipPart(encoder, "ndjson") : encoder
  })
})

/** `format: ndjson` — one JSON object per row, optionally gzip-compressed. */
export default defineFormat({
  type: "ndjson",
  description: "Newline-delimited JSON: one object per row, NULL as null; optional gzip.",
  config: NdjsonConfig,
  make: (config) => Layer.succeed(FormatDriver, makeNdjsonDriver(config))
})
