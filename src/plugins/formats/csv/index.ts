import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { BatchSchema } from "../../../core/batch.js"
import { defineFormat, FormatDriver, type FormatDriverShape } from "../../../core/plugin.js"
import { countTextRows, csvRowCounter } from "../text/count-rows.js"
import { gzipPart } from "../text/gzip.js"
import { textParts } from "../text/parts.js"
import { CsvConfig } from "./config.js"
import { csvFields, csvPartOpener, makeRenderedCsvEncoder } from "./encoder.js"

/** The CSV format driver for one export's config: rows from batches or rendered by the source, optionally gzipped. */
export const makeCsvDriver = (config: CsvConfig): Effect.Effect<FormatDriverShape> =>
  Effect.sync(() => {
    const open = textParts("csv", csvPartOpener, config.compression)
    return {
      extension: config.compression === "gzip" ? "csv.gz" : "csv",
      contentType: "text/csv; charset=utf-8",
      compression: config.compression,
      countRows: countTextRows("csv", csvRowCounter),
      validate: Effect.fn("CsvFormat.validate")(function* (schema: BatchSchema) {
        yield* csvFields(schema)
      }),
      open: Effect.fn("CsvFormat.open")(function* (schema: BatchSchema) {
        yield* csvFields(schema)
        return yield* open(schema, undefined)
      }),
      // Rows the source rendered need no encoding: they stay on the reading thread.
      rendered: {
        dialect: "csv",
        open: Effect.fn("CsvFormat.openRendered")(function* (schema: BatchSchema) {
          yield* csvFields(schema)
          const encoder = makeRenderedCsvEncoder(schema)
          return config.compression === "gzip" ? yield* gzipPart(encoder, "csv") : encoder
        })
      }
    }
  })

/** `format: csv` — RFC 4180 text, optionally gzip-compressed. */
export default defineFormat({
  type: "csv",
  description: "CSV (RFC 4180): header row, comma, LF, NULL as an empty field; optional gzip.",
  config: CsvConfig,
  make: (config) => Layer.effect(FormatDriver, makeCsvDriver(config)),
  // Its own module, so that the CLI's bundle has it as an entry of that name (scripts/bundle-cli.mjs).
  encoderThread: {
    module: new URL("./csv-parts.js", import.meta.url),
    factory: "csvParts",
    freesBatchesAfterWrite: true,
    ownsReturnedBytes: true
  }
})
