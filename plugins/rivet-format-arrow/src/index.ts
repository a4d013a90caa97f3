import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import {
  defineFormat,
  FormatDriver,
  FormatError,
  type BatchSchema,
  type FormatDriverShape,
  type PartEncoder,
  type PartEncoderFactory
} from "rivet-export/plugin"
import { makeArrowEncoder } from "./encoder.js"
import { typeProblem } from "./types.js"

export { arrowSchema, LOGICAL_TYPE_KEY } from "./types.js"

/** `format: arrow` takes no keys of its own (an empty Struct: Rivet rejects any key it does not know). */
export const ArrowConfig = Schema.Struct({})

const failure = (cause: unknown) =>
  new FormatError({
    format: "arrow",
    message: `cannot encode Arrow: ${cause instanceof Error ? cause.message : String(cause)}`
  })

const validate = Effect.fn("ArrowFormat.validate")(function* (schema: BatchSchema) {
  for (const column of schema.columns) {
    const problem = typeProblem(column.type)
    if (problem !== undefined) {
      return yield* new FormatError({
        format: "arrow",
        message: `column '${column.name}': ${problem}`,
        hint: `override its type in the export's columns: block (e.g. ${column.name}: { type: decimal(38,10) } or { type: string })`
      })
    }
  }
})

/** One part's encoder: an Arrow IPC file writer fed one record batch per Rivet batch. */
const openPart = (schema: BatchSchema) =>
  Effect.map(Effect.try({ try: () => makeArrowEncoder(schema), catch: failure }), (encoder) => ({
    write: (batch) => Effect.try({ try: () => encoder.write(batch), catch: failure }),
    finish: Effect.try({ try: () => encoder.finish(), catch: failure })
  }) satisfies PartEncoder)

const open = Effect.fn("ArrowFormat.open")(function* (schema: BatchSchema) {
  return yield* openPart(schema)
})

/**
 * The format's part encoders, for Rivet's encoder thread: `encoderThread` below names this export of this module,
 * and Rivet runs it on a thread of the export's own when it finds that worth it. The format has no keys to read.
 */
export const arrowParts: PartEncoderFactory<typeof ArrowConfig.Type> = () => Effect.succeed(openPart)

/** The driver: one Arrow IPC file per part; Rivet's `max_file_size` starts a new file between record batches. */
export const arrowDriver: FormatDriverShape = {
  extension: "arrow",
  contentType: "application/vnd.apache.arrow.file",
  compression: "none",
  validate,
  open
}

/** `format: arrow` — Apache Arrow IPC files (Feather v2), one record batch per Rivet batch. */
export default defineFormat({
  type: "arrow",
  apiVersion: 1,
  description: "Apache Arrow IPC file (Feather v2): one record batch per batch; loads straight into Polars, DuckDB, pandas.",
  config: ArrowConfig,
  make: () => Layer.succeed(FormatDriver, arrowDriver),
  encoderThread: { module: import.meta.url, factory: "arrowParts" }
})
