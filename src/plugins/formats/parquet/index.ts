import * as Layer from "effect/Layer"
import { defineFormat, FormatDriver } from "../../../core/plugin.js"
import { ParquetConfig } from "./config.js"
import { makeParquetDriver } from "./driver.js"

/** `format: parquet` — Apache Parquet with exact logical types, zstd by default, streamed one row group at a time. */
export default defineFormat({
  type: "parquet",
  config: ParquetConfig,
  description: "Apache Parquet: typed columns, zstd/snappy/gzip, written one row group at a time.",
  make: (config, context) => Layer.scoped(FormatDriver, makeParquetDriver(config, context.env))
})

export { ParquetConfig } from "./config.js"
export { makeParquetDriver } from "./driver.js"
