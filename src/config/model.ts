import * as Schema from "effect/Schema"
import type { LogicalType } from "../core/batch.js"
import type { BatchTransform, FormatPlugin, PluginContext, SinkPlugin, SourcePlugin } from "../core/plugin.js"
import { DurationMs } from "../core/duration.js"
import { ByteSize } from "../core/size.js"
import { ADVISORY_FIELDS, type ConfigNotice } from "./advisory.js"
import { type MetaColumnKind, MetaColumnsConfig } from "./meta-columns.js"
import { PartitionFields, type PartitionSpec } from "./partition.js"
import { TelemetryBlock, type TelemetryConfig } from "./telemetry.js"

/**
 * A plugin value bound to the config block its own schema decoded. `make` builds the plugin's layer from that
 * block: the block's type is matched to the plugin's once, in {@link configure}, and hidden after.
 */
export interface Configured<P extends { readonly make: (config: never, context: PluginContext) => unknown }> {
  readonly plugin: P
  /** The decoded block, for reading (e.g. where a destination writes); `make` is how it reaches the plugin. */
  readonly config: unknown
  readonly make: (context: PluginContext) => ReturnType<P["make"]>
}

/** Binds a plugin to a config block of its own config type. */
export const configure = <C, L, P extends { readonly make: (config: C, context: PluginContext) => L }>(
  plugin: P & { readonly make: (config: C, context: PluginContext) => L },
  config: C
): { readonly plugin: P; readonly config: C; readonly make: (context: PluginContext) => L } => ({
  plugin,
  config,
  make: (context) => plugin.make(config, context)
})

/** A fully decoded config: every plugin chosen and every block decoded by its plugin's schema. */
export interface RivetConfig {
  /** Directory of the config file; relative paths resolve against it. */
  readonly configDir: string
  /** Where the config came from (file path or "(inline)"), for messages. */
  readonly origin: string
  /**
   * True when `origin` is a config file that rebuilds every plugin when read again (no plugins passed in code): a
   * chunk worker thread then loads its own copy (src/engine/lanes).
   */
  readonly reloadable?: boolean | undefined
  readonly source: Configured<SourcePlugin>
  readonly exports: ReadonlyArray<ExportConfig>
  /** `telemetry:`: where runs send traces and metrics (the standard OTEL_* variables win over it). */
  readonly telemetry?: TelemetryConfig | undefined
}

/** How an export selects and splits its rows (docs/modes.md). */
export type ModeConfig =
  | { readonly kind: "full" }
  | {
      readonly kind: "incremental"
      readonly cursorColumn: string
      /** The cursor is `COALESCE(cursorColumn, fallbackColumn)`: rows whose cursor column is NULL use this one. */
      readonly fallbackColumn?: string | undefined
      readonly cursorLagMs?: number | undefined
    }
  | { readonly kind: "time_window"; readonly timeColumn: string; readonly daysWindow: number }
  | {
      readonly kind: "chunked"
      /** Absent: the table's single integer primary key. */
      readonly chunkColumn?: string | undefined
      readonly chunkSize: number
      readonly parallel: number
      readonly checkpoint: boolean
      /** Attempts per chunk before the run fails (default: the retry policy's retries + 1). */
      readonly maxAttempts?: number | undefined
    }
  | {
      readonly kind: "keyset"
      /** Absent: the table's primary key. */
      readonly keyColumns?: ReadonlyArray<string> | undefined
      readonly pageSize: number
      readonly checkpoint: boolean
      /** Attempts per page before the run fails (default: the retry policy's retries + 1). */
      readonly maxAttempts?: number | undefined
    }

export type ModeKind = ModeConfig["kind"]
/** The configuration of one mode, e.g. `ModeOf<"chunked">`. */
export type ModeOf<K extends ModeKind> = Extract<ModeConfig, { readonly kind: K }>

export interface ExportConfig {
  readonly name: string
  readonly table?: { readonly schema?: string | undefined; readonly name: string } | undefined
  readonly query?: string | undefined
  readonly mode: ModeConfig
  /** A run that finds no rows writes nothing (no manifest, no `_SUCCESS`) and reports `skipped`. */
  readonly skipEmpty: boolean
  /** Checks on the rows written, evaluated while streaming; a failure publishes nothing (exit 3). */
  readonly quality?: QualityConfig | undefined
  /** What a change of the output schema against the stored baseline does. */
  readonly onSchemaDrift: "warn" | "continue" | "fail"
  /** A transform given in code (never from YAML), between the source and the format. */
  readonly transform?: BatchTransform | undefined
  readonly batchSize: number
  readonly maxFileSize?: number | undefined
  readonly columnTypes: ReadonlyMap<string, LogicalType>
  /** `partition_by:`: Hive-style directories by column values (docs/partitioning.md). */
  readonly partition?: PartitionSpec | undefined
  /** Columns Rivet appends after the source's (`meta_columns:`), in this order. */
  readonly metaColumns?: ReadonlyArray<MetaColumnKind> | undefined
  /** What the config says that has no effect (the Rust rivet's scheduling keys), reported by check, plan and run. */
  readonly notices?: ReadonlyArray<ConfigNotice> | undefined
  readonly format: Configured<FormatPlugin>
  readonly destination: Configured<SinkPlugin>
  /**
   * Another export of the config writes to the same destination: the markers are then named per export
   * (`{export}.manifest.json`, `_SUCCESS.{export}`) instead of `manifest.json` and `_SUCCESS`.
   */
  readonly sharedDestination?: boolean | undefined
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/
const PLAIN_IDENTIFIER = IDENTIFIER.source.slice(1, -1)

/** File names are at most 255 bytes; a part name adds up to ~70 characters (timestamp, chunk, nonce, extension). */
export const MAX_EXPORT_NAME_LENGTH = 128

export const ExportName = Schema.String.pipe(
  Schema.filter((name) => {
    if (!SAFE_NAME.test(name) || name.includes("..")) {
      return `invalid export name ${JSON.stringify(name)}: use letters, digits, '_', '-' and '.', starting with a letter or digit (it becomes part of file names)`
    }
    return name.length <= MAX_EXPORT_NAME_LENGTH
      ? true
      : `export name is ${name.length} characters long: at most ${MAX_EXPORT_NAME_LENGTH} (it becomes part of file names, which are limited to 255 bytes)`
  }, { jsonSchema: { pattern: SAFE_NAME.source, maxLength: MAX_EXPORT_NAME_LENGTH } })
).annotations({ description: "Unique name of the export; used in file names, so letters, digits, _ - . only." })

/**
 * PostgreSQL's NAMEDATALEN - 1: the server silently truncates a longer identifier to its first 63 bytes, so a
 * long `table:` could name (and export) a different existing table.
 */
export const MAX_IDENTIFIER_BYTES = 63

/** Why `name` cannot be an identifier because of its length, or undefined. */
export const identifierLengthProblem = (what: string, name: string): string | undefined => {
  const bytes = Buffer.byteLength(name, "utf8")
  return bytes <= MAX_IDENTIFIER_BYTES
    ? undefined
    : `${what} ${JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name)} is ${bytes} bytes long: identifiers are at most ${MAX_IDENTIFIER_BYTES} bytes (UTF-8) — PostgreSQL would silently cut it to its first ${MAX_IDENTIFIER_BYTES} bytes and read another object`
}

export const TableName = Schema.String.pipe(
  Schema.filter((table) => {
    const parts = table.split(".")
    if (!(parts.length <= 2 && parts.every((part) => IDENTIFIER.test(part)))) {
      return `invalid table name ${JSON.stringify(table)}: use 'table' or 'schema.table' with plain identifiers (write a query: for anything else)`
    }
    const tooLong = parts.map((part, index) =>
      identifierLengthProblem(parts.length === 2 && index === 0 ? "schema name" : "table name", part)
    )
    return tooLong.find((problem) => problem !== undefined) ?? true
  }, { jsonSchema: { pattern: `^${PLAIN_IDENTIFIER}(\\.${PLAIN_IDENTIFIER})?$` } })
).annotations({ description: "Table to export, `table` or `schema.table`; becomes SELECT * FROM it." })

const NonEmptyColumnName = Schema.String.pipe(
  Schema.filter((name) => (name.trim().length > 0 ? true : "a column name must not be empty"))
)

const ColumnName = NonEmptyColumnName.pipe(Schema.filter((name) => identifierLengthProblem("column name", name) ?? true))

// A filter on the record, not its key schema: a key that fails its schema is reported as an "unknown key".
const keysAreColumnNames = <A extends Record<string, unknown>, I, R>(record: Schema.Schema<A, I, R>) =>
  record.pipe(
    Schema.filter((value) =>
      Object.keys(value).map((name) => identifierLengthProblem("column name", name)).find((problem) => problem !== undefined) ?? true
    )
  )

const Ratio = Schema.Number.pipe(
  Schema.between(0, 1, { message: () => "must be a ratio from 0 to 1 (e.g. 0.05 for 5%)" })
)

export const QualityConfig = Schema.Struct({
  row_count_min: Schema.optional(
    Schema.Int.pipe(Schema.nonNegative({ message: () => "must be a whole number of at least 0" })).annotations({
      description: "Fail when the export writes fewer rows."
    })
  ),
  row_count_max: Schema.optional(
    Schema.Int.pipe(Schema.nonNegative({ message: () => "must be a whole number of at least 0" })).annotations({
      description: "Fail when the export writes more rows."
    })
  ),
  null_ratio_max: Schema.optional(
    Schema.Record({ key: Schema.String, value: Ratio }).pipe(keysAreColumnNames).annotations({
      description: "Per column: fail when the share of NULLs exceeds this ratio, e.g. { email: 0.01 }."
    })
  ),
  unique_columns: Schema.optional(
    Schema.Array(ColumnName).annotations({
      description: "Columns whose non-NULL values must all be distinct (checked with bounded memory)."
    })
  )
}).annotations({ description: "Quality gates: a failed gate publishes nothing and exits with code 3." })
export type QualityConfig = typeof QualityConfig.Type

/** The export keys the runtime itself owns; the format plugin owns the rest (e.g. `compression`). */
export const ExportCore = Schema.Struct({
  name: ExportName,
  table: Schema.optional(TableName),
  query: Schema.optional(
    Schema.Trim.pipe(Schema.nonEmptyString({ message: () => "query must not be empty" })).annotations({
      description: "SQL query to export (instead of table)."
    })
  ),
  mode: Schema.optional(
    Schema.Literal("full", "incremental", "chunked", "keyset", "time_window").annotations({
      description:
        "How rows are selected: full (every row, default), incremental (rows past the stored cursor), chunked (key ranges, optionally in parallel), keyset (pages ordered by a key), time_window (the last N days)."
    })
  ),
  skip_empty: Schema.optional(
    Schema.Boolean.annotations({
      description: "When a run finds no rows: write nothing (no manifest, no _SUCCESS) and report `skipped`."
    })
  ),
  cursor_column: Schema.optional(
    ColumnName.annotations({ description: "incremental: the orderable column whose stored maximum marks the position." })
  ),
  cursor_fallback_column: Schema.optional(
    ColumnName.annotations({
      description:
        "incremental: a second column for rows whose cursor_column is NULL; the cursor becomes COALESCE(cursor_column, cursor_fallback_column) (no output column is added)."
    })
  ),
  incremental_cursor_mode: Schema.optional(
    Schema.Literal("single_column", "coalesce").annotations({
      description:
        "incremental, the Rust rivet's spelling: coalesce needs cursor_fallback_column (which implies it), single_column refuses one."
    })
  ),
  cursor_lag: Schema.optional(
    DurationMs.annotations({
      description:
        "incremental with a timestamp cursor: only export rows older than now minus this (e.g. 5m), so rows committed late with an earlier timestamp are not skipped."
    })
  ),
  chunk_column: Schema.optional(
    ColumnName.annotations({
      description: "chunked: integer column the chunks split on (default: the table's single integer primary key)."
    })
  ),
  chunk_size: Schema.optional(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(1, { message: () => "must be a whole number of at least 1" })).annotations({
      description: "chunked: key values per chunk (default 100000)."
    })
  ),
  parallel: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 64, { message: () => "must be a whole number from 1 to 64" })).annotations({
      description: "chunked: chunks read at once, each on its own connection (default 1)."
    })
  ),
  chunk_checkpoint: Schema.optional(
    Schema.Boolean.annotations({
      description: "chunked/keyset: record each committed chunk or page so `rivet run --resume` continues a failed run."
    })
  ),
  chunk_max_attempts: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 100, { message: () => "must be a whole number from 1 to 100" })).annotations({
      description:
        "chunked/keyset: attempts per chunk or page when the source fails in a retryable way (connection lost), before the run fails (default 6: the first and 5 retries)."
    })
  ),
  key_columns: Schema.optional(
    Schema.Union(NonEmptyColumnName, Schema.NonEmptyArray(NonEmptyColumnName))
      .annotations({
        message: () => ({ message: "must be a column name or a non-empty list of column names, e.g. [tenant_id, id]", override: true })
      })
      // After the union, whose message replaces every inner one: the length problem keeps its own words.
      .pipe(
        Schema.filter((key) =>
          (typeof key === "string" ? [key] : key).map((name) => identifierLengthProblem("column name", name)).find((problem) => problem !== undefined) ?? true
        )
      )
      .annotations({
        description: "keyset: the unique, non-null key to page by, one column or a list (default: the primary key)."
      })
  ),
  page_size: Schema.optional(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(1, { message: () => "must be a whole number of at least 1" })).annotations({
      description: "keyset: rows per page; each page is one short statement and its own part (default 100000)."
    })
  ),
  time_column: Schema.optional(
    ColumnName.annotations({ description: "time_window: the timestamp or date column the window applies to." })
  ),
  days_window: Schema.optional(
    Schema.Int.pipe(Schema.between(0, 36_500, { message: () => "must be a whole number of days from 0 to 36500" })).annotations({
      description: "time_window: export rows from UTC midnight this many days ago until now (0 = today)."
    })
  ),
  format: Schema.optional(
    Schema.String.annotations({ description: "Output format plugin: parquet (default), csv, ndjson." })
  ),
  batch_size: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 1_000_000, { message: () => "must be a whole number from 1 to 1000000" })).annotations({
      description: "Rows fetched from the source per round trip (default 10000)."
    })
  ),
  max_file_size: Schema.optional(
    ByteSize.annotations({
      description: "Start a new part once a part reaches this size (e.g. 256MiB); parts are named _part{N}."
    })
  ),
  columns: Schema.optional(
    Schema.Record({
      key: Schema.String,
      value: Schema.Union(
        Schema.Struct({
          type: Schema.String.annotations({ description: "Logical type, e.g. decimal(38,9), int64, string." })
        }),
        Schema.String.annotations({ description: "Short form of { type: ... }: amount: decimal(18,2)." })
      )
    }).pipe(keysAreColumnNames).annotations({
      description: "Per-column type overrides, e.g. for unbounded numeric columns: amount: { type: decimal(18,2) } or amount: decimal(18,2)."
    })
  ),
  quality: Schema.optional(QualityConfig),
  ...PartitionFields,
  meta_columns: Schema.optional(MetaColumnsConfig),
  on_schema_drift: Schema.optional(
    Schema.Literal("warn", "continue", "fail").annotations({
      description:
        "When the output schema differs from the last successful run's: warn (default: report, then accept), continue (accept silently), fail (publish nothing, exit 4)."
    })
  ),
  destination: Schema.Unknown.annotations({ description: "Where the files go: { type: local | stdout | s3, ... }." }),
  ...ADVISORY_FIELDS
})
export type ExportCore = typeof ExportCore.Type

export const TopLevel = Schema.Struct({
  source: Schema.Unknown.annotations({ description: "The database to read: { type: postgres, ... }." }),
  exports: Schema.Array(Schema.Unknown).annotations({ description: "The exports to run, in order." }),
  plugins: Schema.optional(
    Schema.Array(Schema.String).annotations({
      description: "Third-party plugin modules: npm package names or paths relative to this file."
    })
  ),
  telemetry: Schema.optional(TelemetryBlock)
})

export const DEFAULT_BATCH_SIZE = 10_000
export const DEFAULT_CHUNK_SIZE = 100_000
export const DEFAULT_PAGE_SIZE = 100_000
export const DEFAULT_FORMAT = "parquet"

/** Parses a `columns:` override type: `decimal(38,9)`, `int64`, `string`, `timestamptz`, `list<int32>`, … */
export const parseLogicalType = (text: string): LogicalType | undefined => {
  const spelled = text.trim().toLowerCase()
  const decimal = /^(?:decimal|numeric)\((\d+)\s*,\s*(\d+)\)$/.exec(spelled)
  if (decimal) {
    const precision = Number(decimal[1])
    const scale = Number(decimal[2])
    return precision >= 1 && precision <= 76 && scale <= precision ? { kind: "decimal", precision, scale } : undefined
  }
  const list = /^list<(.+)>$/.exec(spelled)
  if (list) {
    const element = parseLogicalType(list[1]!)
    return element ? { kind: "list", element } : undefined
  }
  const aliases: Record<string, LogicalType["kind"]> = {
    int16: "int16", smallint: "int16", int2: "int16",
    int32: "int32", int: "int32", integer: "int32", int4: "int32",
    int64: "int64", bigint: "int64", int8: "int64",
    float32: "float32", real: "float32", float4: "float32",
    float64: "float64", double: "float64", float8: "float64",
    string: "string", text: "string", varchar: "string",
    bool: "bool", boolean: "bool",
    date: "date", time: "time",
    timestamp: "timestamp", timestamptz: "timestamptz", timestamp_tz: "timestamptz",
    uuid: "uuid", json: "json", jsonb: "json",
    bytes: "bytes", bytea: "bytes", binary: "bytes",
    interval: "interval"
  }
  const kind = aliases[spelled]
  return kind === undefined || kind === "decimal" || kind === "list" ? undefined : ({ kind } as LogicalType)
}
