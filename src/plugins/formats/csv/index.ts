import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type { BatchSchema } from "../../../core/batch.js"
import { defineFormat, FormatDriver, type FormatDriverShape } from "../../../core/plugin.js"
import { countTextRows, csvRowCounter } from "../text/count-rows.js"
import { gzipPart } from "../text/gzip.js"
import { encoderThreadWanted, makeEncoderThread } from "../thread/encoder-thread.js"
import { CsvConfig } from "./config.js"
import { csvFields, csvPartOpener, makeRenderedCsvEncoder } from "./encoder.js"

/**
 * The CSV format driver for one export's config. Rows from batches are encoded on a thread of the export's own
 * when `env` allows it (see `encoderThreadWanted`), compressed on the reading side; rows the source rendered need
 * no encoding and stay on the reading thread.
 */
export const makeCsvDriver = (
  config: CsvConfig,
  env: Readonly<Record<string, string | undefined>> = {}
): Effect.Effect<FormatDriverShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    const open = encoderThreadWanted(env)
      ? makeEncoderThread({ format: "csv", config }, yield* Effect.scope, Effect.succeed(csvPartOpener))
      : csvPartOpener
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
        const encoder = yield* open(schema, undefined)
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
    }
  })

/** `format: csv` — RFC 4180 text, optionally gzip-compressed. */
export default defineFormat({
  type: "csv",
  description: "CSV (RFC 4180): header row, comma, LF, NULL as an empty field; optional gzip.",
  config: CsvConfig,
  make: (config, context) => Layer.scoped(FormatDriver, makeCsvDriver(config, context.env))
})
