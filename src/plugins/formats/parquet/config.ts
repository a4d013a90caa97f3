import * as Schema from "effect/Schema"

/** Page codecs Rivet writes. `none` is Parquet's UNCOMPRESSED. */
export const ParquetCompression = Schema.Literal("zstd", "snappy", "gzip", "lz4", "none").annotations({
  identifier: "ParquetCompression",
  description:
    "Page compression: zstd (default: smallest files, about as fast as snappy), snappy, gzip, lz4 (Parquet's LZ4_RAW, as the Rust rivet writes it) or none.",
  message: (issue) => ({
    message: `compression must be one of zstd, snappy, gzip, lz4 or none; got ${JSON.stringify(issue.actual)}`,
    override: true
  })
})
export type ParquetCompression = typeof ParquetCompression.Type

/** Levels each codec accepts, and the level used when none is given. */
export const COMPRESSION_LEVELS = {
  zstd: { min: 1, max: 22, default: 3 },
  gzip: { min: 0, max: 9, default: 6 }
} as const

/**
 * When `row_group_size` is not set, a row group ends at `DEFAULT_ROW_GROUP_ROWS` rows or once its rows' size in
 * the batches' buffers (byte lengths of values, offsets and text; no per-value estimate) reaches
 * `DEFAULT_ROW_GROUP_BYTES` (checked after each batch), whichever comes first.
 *
 * A row group's rows wait in their batches' buffers; when it is complete, each column in turn becomes the JS
 * values hyparquet-writer encodes, so the group's size sets the encoder's peak memory. With the bench_2m shape
 * (~290 buffer bytes per row) 4 MiB makes 20k-row groups (two 10k-row batches). Measured with bench/parquet-encode.ts (500k rows of
 * 20 mixed columns, zstd, CPU-s of encoding / file size): 4 MiB 7.6 s / 23.9 MiB, 16 MiB 8.6 s / 22.6 MiB —
 * bigger groups save a few percent of file size for more CPU (more garbage survives into the old generation)
 * and memory. A row count alone would also make narrow tables' groups needlessly small (readers prefer big
 * groups) and leave very wide rows (large text/JSON) unbounded, hence the byte budget.
 */
export const DEFAULT_ROW_GROUP_ROWS = 100_000
export const DEFAULT_ROW_GROUP_BYTES = 4 * 2 ** 20

const Level = Schema.Int.annotations({
  description: "Compression level: zstd 1–22 (default 3), gzip 0–9 (default 6). Not allowed for snappy, lz4 or none.",
  message: (issue) => ({
    message: `compression_level must be a whole number (zstd 1–22, gzip 0–9); got ${JSON.stringify(issue.actual)}`,
    override: true
  })
})

const RowGroupSize = Schema.Int.pipe(Schema.between(1, 10_000_000)).annotations({
  description:
    "Rows per Parquet row group. Unset: up to 100000 rows, fewer for wide rows (about 4 MiB of data per " +
    "group) to keep memory low. A row group is buffered in memory before it is encoded, so a larger " +
    "setting costs memory in proportion to the row width; bytes leave the encoder after each group.",
  message: (issue) => ({
    message: `row_group_size must be a whole number of rows from 1 to 10000000; got ${JSON.stringify(issue.actual)}`,
    override: true
  })
})

const levelProblem = (compression: ParquetCompression, level: number | undefined): string | undefined => {
  if (level === undefined) return undefined
  if (compression === "snappy" || compression === "lz4" || compression === "none") {
    return `compression_level is not supported for compression '${compression}': remove it, or use zstd (1–22) or gzip (0–9)`
  }
  const range = COMPRESSION_LEVELS[compression]
  return level < range.min || level > range.max
    ? `compression_level ${level} is out of range for ${compression}: use ${range.min}–${range.max} (default ${range.default})`
    : undefined
}

/** The export-level keys the Parquet format owns. */
export const ParquetConfig = Schema.Struct({
  compression: Schema.optionalWith(ParquetCompression, { exact: true, default: () => "zstd" as const }),
  compression_level: Schema.optionalWith(Level, { exact: true }),
  row_group_size: Schema.optionalWith(RowGroupSize, { exact: true })
})
  .pipe(
    Schema.filter((config) => {
      const message = levelProblem(config.compression, config.compression_level)
      return message === undefined ? true : { path: ["compression_level"], message }
    })
  )
  .annotations({ identifier: "ParquetConfig", description: "Parquet output options." })

export type ParquetConfig = typeof ParquetConfig.Type

/** When a row group is complete: exactly `row_group_size` rows when set, else the default rows/bytes budget. */
export const rowGroupLimits = (config: ParquetConfig): { readonly rows: number; readonly bytes: number } =>
  config.row_group_size === undefined
    ? { rows: DEFAULT_ROW_GROUP_ROWS, bytes: DEFAULT_ROW_GROUP_BYTES }
    : { rows: config.row_group_size, bytes: Number.POSITIVE_INFINITY }

/** The level actually used for a codec that takes one. */
export const effectiveLevel = (config: ParquetConfig): number | undefined => {
  const compression = config.compression
  if (compression !== "zstd" && compression !== "gzip") return undefined
  return config.compression_level ?? COMPRESSION_LEVELS[compression].default
}
