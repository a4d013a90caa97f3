import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { Batch, BatchSchema } from "../../../core/batch.js"
import { describeCause, FormatError } from "../../../core/errors.js"
import type { FormatDriverShape, PartInfo } from "../../../core/plugin.js"
import { type ParquetConfig, rowGroupLimits } from "./config.js"
import { countParquetRows } from "./count-rows.js"
import { schemaProblems } from "./schema.js"
import { encoderThreadWanted, makeEncoderThread, type ThreadedOpen } from "../thread/encoder-thread.js"

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
 * Opens Parquet parts on the calling thread (the encoder thread's way, the fallback without one, and an export's first
 * part when it ends within its first batch). The writer and its compressors load here, on first use: a reading thread
 * whose parts all go to the encoder thread never loads them (apache-arrow, for the footer's Arrow schema, alone costs
 * ~20 MB). `release` gets each batch once its rows are encoded (see `EncoderSettings`).
 */
export const parquetPartOpener = (
  config: ParquetConfig,
  release?: (batch: Batch) => void
): Effect.Effect<ThreadedOpen, FormatError> =>
  Effect.gen(function* () {
    const modules = yield* Effect.promise(() => Promise.all([import("./compressors.js"), import("./encoder.js")]))
    const [{ makeCodec }, { makePartEncoder, PartBuffersPool }] = modules
    const codec = yield* makeCodec(config)
    const limits = rowGroupLimits(config)
    const buffers = new PartBuffersPool()
    return (schema, part) =>
      Effect.try({
        try: () =>
          makePartEncoder(schema, { codec, rowGroupSize: limits.rows, rowGroupBytes: limits.bytes, release, buffers }, part),
        catch: (cause) =>
          new FormatError({ format: "parquet", message: `could not start a Parquet part: ${describeCause(cause)}` })
      })
  })

/**
 * The Parquet format driver for one export's config (loads the zstd compressor when configured). Parts are encoded
 * on a thread of the export's own when `env` allows it (see `encoderThreadWanted`); the thread ends with the scope.
 */
export const makeParquetDriver = (
  config: ParquetConfig,
  env: Readonly<Record<string, string | undefined>> = {}
): Effect.Effect<FormatDriverShape, FormatError, Scope.Scope> =>
  Effect.gen(function* () {
    // With a thread, the codec is loaded there, or here for a part encoded here (a failure to load it fails that part).
    const open = encoderThreadWanted(env)
      ? makeEncoderThread({ format: "parquet", config }, yield* Effect.scope, parquetPartOpener(config))
      : yield* parquetPartOpener(config)
    return {
      extension: "parquet",
      contentType: "application/vnd.apache.parquet",
      compression: config.compression,
      validate,
      countRows: countParquetRows,
      open: Effect.fn("ParquetFormat.open")(function* (schema: BatchSchema, part?: PartInfo) {
        yield* validate(schema)
        return yield* open(schema, part)
      })
    }
  })
