import * as Effect from "effect/Effect"
import { describeCause, FormatError } from "../../../core/errors.js"
import type { EncoderThreadHooks, PartEncoderFactory, PartOpener } from "../../../core/plugin.js"
import { type ParquetConfig, rowGroupLimits } from "./config.js"

/**
 * Opens Parquet parts on the calling thread: the driver's `open` after its schema check, and the encoder thread's.
 * The writer and its compressors load here, on first use: a reading thread whose parts all go to the encoder thread
 * never loads them (apache-arrow, for the footer's Arrow schema, alone costs ~20 MB). On an encoder thread, `hooks`
 * free each batch once its rows are encoded, and the encoder's own scratch with it (see `EncoderSettings`).
 */
export const parquetPartOpener = (config: ParquetConfig, hooks?: EncoderThreadHooks): Effect.Effect<PartOpener, FormatError> =>
  Effect.gen(function* () {
    const modules = yield* Effect.promise(() => Promise.all([import("./compressors.js"), import("./encoder.js")]))
    const [{ makeCodec }, { makePartEncoder, PartBuffersPool }] = modules
    const codec = yield* makeCodec(config)
    const limits = rowGroupLimits(config)
    const buffers = new PartBuffersPool()
    return (schema, part) =>
      Effect.try({
        try: () =>
          makePartEncoder(
            schema,
            {
              codec,
              rowGroupSize: limits.rows,
              rowGroupBytes: limits.bytes,
              release: hooks?.releaseBatch,
              releaseBuffers: hooks?.releaseBuffers,
              buffers
            },
            part
          ),
        catch: (cause) =>
          new FormatError({ format: "parquet", message: `could not start a Parquet part: ${describeCause(cause)}` })
      })
  })

/**
 * The Parquet part encoders for an encoder thread (parquet/index.ts names this module and export): the batches arrive
 * there transferred, and a part frees each once its last rows are in a row group written out.
 */
export const parquetParts: PartEncoderFactory<ParquetConfig> = (config, hooks) => parquetPartOpener(config, hooks)
