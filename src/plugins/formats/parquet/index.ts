import * as Layer from "effect/Layer"
import { defineFormat, FormatDriver } from "../../../core/plugin.js"
import { ParquetConfig } from "./config.js"
import { makeParquetDriver } from "./driver.js"

/** `format: parquet` — Apache Parquet with exact logical types, zstd by default, streamed one row group at a time. */
export default defineFormat({
  type: "parquet",
  config: ParquetConfig,
  description: "Apache Parquet: typed columns, zstd/snappy/gzip, written one row group at a time.",
  make: (config) => Layer.effect(FormatDriver, makeParquetDriver(config)),
  // Its own module, so that the CLI's bundle has it as an entry of that name (scripts/bundle-cli.mjs).
  encoderThread: {
    module: new URL("./parquet-parts.js", import.meta.url),
    factory: "parquetParts",
    ownsReturnedBytes: true
  }
})

export { ParquetConfig } from "./config.js"
export { makeParquetDriver } from "./driver.js"
