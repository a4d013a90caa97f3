import { compress as zstdCompress, init as zstdInit } from "@bokuweb/zstd-wasm"
import * as Effect from "effect/Effect"
import { compress as lz4Compress } from "lz4-wasm-nodejs"
import { gzipSync } from "node:zlib"
import { snappyCompress } from "hyparquet-writer/src/snappy.js"
import { describeCause, FormatError } from "../../../core/errors.js"
import { effectiveLevel, type ParquetConfig } from "./config.js"

import type { Compress } from "./writer/chunk.js"
import type { Codec as CodecName } from "./writer/metadata.js"

/** How pages are compressed: the footer's codec name and a synchronous compressor for page bodies. */
export interface Codec {
  readonly codec: CodecName
  readonly compress: Compress
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
 * An LZ4 block (Parquet's LZ4_RAW: no frame, no size header). lz4-wasm-nodejs (lz4_flex built to wasm) prepends the
 * uncompressed size as 4 bytes, which Parquet keeps in the page header instead.
 */
const lz4Raw: Compress = (input) => lz4Compress(input).subarray(4)

/**
 * The codec for a config. zstd comes from a wasm build of libzstd: pages are compressed synchronously as they are
 * written, and Node 20's zlib has no zstd. Snappy is hyparquet-writer's pure-JS compressor.
 */
export const makeCodec = (config: ParquetConfig): Effect.Effect<Codec, FormatError> => {
  const level = effectiveLevel(config)
  switch (config.compression) {
    case "zstd":
      return Effect.as(initZstd, {
        codec: "ZSTD",
        compress: (input) => zstdCompress(input, level),
        label: "zstd"
      })
    case "gzip":
      return Effect.succeed({
        codec: "GZIP",
        compress: (input) => gzipSync(input, level === undefined ? {} : { level }),
        label: "gzip"
      })
    case "snappy":
      return Effect.succeed({ codec: "SNAPPY", compress: snappyCompress, label: "snappy" })
    case "lz4":
      return Effect.succeed({ codec: "LZ4_RAW", compress: lz4Raw, label: "lz4" })
    case "none":
      return Effect.succeed({ codec: "UNCOMPRESSED", compress: (input) => input, label: "none" })
  }
}
