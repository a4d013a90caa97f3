import { compress as zstdCompress, init as zstdInit } from "@bokuweb/zstd-wasm"
import * as Effect from "effect/Effect"
import { gzipSync } from "node:zlib"
import type { ParquetWriter } from "hyparquet-writer"
import { describeCause, FormatError } from "../../runtime/errors.js"
import { effectiveLevel, type ParquetConfig } from "./config.js"

type WriterOptions = ConstructorParameters<typeof ParquetWriter>[0]

/** What the writer needs to compress pages: its codec name and, for codecs it lacks, a synchronous compressor. */
export interface Codec {
  readonly codec: NonNullable<WriterOptions["codec"]>
  readonly compressors: NonNullable<WriterOptions["compressors"]>
  /** The manifest's compression label, as configured. */
  readonly label: string
}

// The wasm module is process-wide: instantiate it once, whoever asks first.
let zstdReady: Promise<void> | undefined

const initZstd = Effect.tryPromise({
  try: () => (zstdReady ??= zstdInit().catch((cause: unknown) => {
    zstdReady = undefined
    throw cause
  })),
  catch: (cause) =>
    new FormatError({
      format: "parquet",
      message: `could not load the zstd compressor (@bokuweb/zstd-wasm): ${describeCause(cause)}`,
      hint: "reinstall Rivet's dependencies, or set compression: snappy"
    })
})

/**
 * The codec for a config. zstd comes from a wasm build of libzstd: hyparquet-writer calls compressors
 * synchronously, and Node 20's zlib has no zstd.
 */
export const makeCodec = (config: ParquetConfig): Effect.Effect<Codec, FormatError> => {
  const level = effectiveLevel(config)
  switch (config.compression) {
    case "zstd":
      return Effect.as(initZstd, {
        codec: "ZSTD",
        compressors: { ZSTD: (input: Uint8Array) => zstdCompress(input, level) },
        label: "zstd"
      })
    case "gzip":
      return Effect.succeed({
        codec: "GZIP",
        compressors: { GZIP: (input: Uint8Array) => gzipSync(input, level === undefined ? {} : { level }) },
        label: "gzip"
      })
    case "snappy":
      return Effect.succeed({ codec: "SNAPPY", compressors: {}, label: "snappy" })
    case "none":
      return Effect.succeed({ codec: "UNCOMPRESSED", compressors: {}, label: "none" })
  }
}
