import * as Effect from "effect/Effect"
import type { BatchSchema } from "../../../core/batch.js"
import { FormatError } from "../../../core/errors.js"
import type { FormatDriverShape, PartInfo } from "../../../core/plugin.js"
import type { ParquetConfig } from "./config.js"
import { countParquetRows } from "./count-rows.js"
import { parquetPartOpener } from "./parquet-parts.js"
import { schemaProblems } from "./schema.js"

/** Fails with every reason the schema cannot be written as Parquet. */
const validate = Effect.fn("ParquetFormat.validate")(function* (schema: BatchSchema) {
  const problems = schemaProblems(schema)
  if (problems.length === 0) return
  const hints = [...new Set(problems.map((problem) => problem.hint))]
  return yield* Effect.fail(
    new FormatError({
      format: "parquet",
      message: `cannot write Parquet: ${problems.map((problem) => problem.message).join("; ")}`,
      hint: hints.join("; ")
    })
  )
})

/**
 * The Parquet format driver for one export's config. The writer and its codec (zstd's wasm module when configured)
 * load with the first part this thread encodes, which is none when the engine encodes the export's parts on an
 * encoder thread (a failure to load them fails that part).
 */
export const makeParquetDriver = (config: ParquetConfig): Effect.Effect<FormatDriverShape> =>
  Effect.map(Effect.cached(parquetPartOpener(config)), (opener) => ({
    extension: "parquet",
    contentType: "application/vnd.apache.parquet",
    compression: config.compression,
    validate,
    countRows: countParquetRows,
    open: Effect.fn("ParquetFormat.open")(function* (schema: BatchSchema, part?: PartInfo) {
      yield* validate(schema)
      return yield* (yield* opener)(schema, part)
    })
  }))
