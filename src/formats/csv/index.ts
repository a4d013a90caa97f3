import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type { BatchSchema } from "../../runtime/batch.js"
import { defineFormat, FormatDriver, type FormatDriverShape } from "../../runtime/plugin.js"
import { countTextRows, csvRowCounter } from "../text/count-rows.js"
import { gzipPart } from "../text/gzip.js"
import { CsvConfig } from "./config.js"
import { csvFields, makeCsvEncoder, makeRenderedCsvEncoder } from "./encoder.js"

/** The CSV format driver for one export's config. */
export const makeCsvDriver = (config: CsvConfig): FormatDriverShape => ({
  extension: config.compression === "gzip" ? "csv.gz" : "csv",
  contentType: "text/csv; charset=utf-8",
  compression: config.compression,
  countRows: countTextRows("csv", csvRowCounter),
  validate: Effect.fn("CsvFormat.validate")(function* (schema: BatchSchema) {
    yield* csvFields(schema)
  }),
  open: Effect.fn("CsvFormat.open")(function* (schema: BatchSchema) {
    const encoder = makeCsvEncoder(schema, yield* csvFields(schema))
    return config.compression === "gzip" ? yield* gzipPart(encoder, "csv") : encoder
  }),
  rendered: {
    dialect: "csv",
    open: Effect.fn("CsvFormat.openRendered")(function* (schema: BatchSchema) {
      yield* csvFields(schema)
      const encoder = makeRenderedCsvEncoder(schema)
      return config.compression === "gzip" ? yield* gzipPart(encoder, "csv") : encoder
    })
  }
})

/** `format: csv` — RFC 4180 text, optionally gzip-compressed. */
export default defineFormat({
  type: "csv",
  description: "CSV (RFC 4180): header row, comma, LF, NULL as an empty field; optional gzip.",
  config: CsvConfig,
  make: (config) => Layer.succeed(FormatDriver, makeCsvDriver(config))
})
