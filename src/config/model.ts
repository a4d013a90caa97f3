import * as Schema from "effect/Schema"
import type { LogicalType } from "../core/batch.js"
import { identifierLengthProblem } from "../core/source/identifiers.js"
import type { BatchTransform, AnyFormatPlugin, PluginContext, AnySinkPlugin, AnySourcePlugin } from "../core/plugin.js"
import { ByteSize } from "../core/size.js"
import type { ExportMode } from "./mode.js"
import { ADVISORY_FIELDS, type ConfigNotice } from "./advisory.js"
import { type MetaColumnKind, MetaColumnsConfig } from "./meta-columns.js"
import { PartitionFields, type PartitionSpec } from "./partition.js"
import { type ColumnMask, MaskingBlock, type MaskingConfig, MaskMethodSchema } from "./masking.js"
import { TableFormatConfig, type TableFormatSpec } from "./table-format.js"
import { NotificationsBlock, type NotificationsConfig } from "./notifications.js"
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
  readonly source: Configured<AnySourcePlugin>
  readonly exports: ReadonlyArray<ExportConfig>
  /** `telemetry:`: where runs send traces and metrics (the standard OTEL_* variables win over it). */
  readonly telemetry?: TelemetryConfig | undefined
  /** `masking:`: the keys of hmac_sha256 masks. */
  readonly masking?: MaskingConfig | undefined
  /** `parallel_exports:`: exports run at once (default 1: one after another). */
  readonly parallelExports?: number | undefined
  /** `notifications:`: the webhook told about failed (or successful) exports. */
  readonly notifications?: NotificationsConfig | undefined
}

export interface ExportConfig {
  readonly name: string
  readonly table?: { readonly schema?: string | undefined; readonly name: string } | undefined
  readonly query?: string | undefined
  readonly mode: ExportMode
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
  /** `columns: { x: { mask: … } }`: columns masked before any byte is written, in config order. */
  readonly masks: ReadonlyArray<ColumnMask>
  /** `allow_unmasked:`: columns that look personal but are exported as they are on purpose (no note). */
  readonly allowUnmasked: ReadonlyArray<string>
  /** `partition_by:`: Hive-style directories by column values (docs/partitioning.md). */
  readonly partition?: PartitionSpec | undefined
  /** Columns Rivet appends after the source's (`meta_columns:`), in this order. */
  readonly metaColumns?: ReadonlyArray<MetaColumnKind> | undefined
  /** What the config says that has no effect (the Rust rivet's scheduling keys), reported by check, plan and run. */
  readonly notices?: ReadonlyArray<ConfigNotice> | undefined
  readonly format: Configured<AnyFormatPlugin>
  readonly destination: Configured<AnySinkPlugin>
  /** `table_format:`: each run's parts committed as one snapshot of a table at the destination (docs/formats/iceberg.md). */
  readonly tableFormat?: TableFormatSpec | undefined
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

export const NonEmptyColumnName = Schema.String.pipe(
  Schema.filter((name) => (name.trim().length > 0 ? true : "a column name must not be empty"))
)

export const ColumnName = NonEmptyColumnName.pipe(Schema.filter((name) => identifierLengthProblem("column name", name) ?? true))

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
    Schema.String.annotations({ description: "How rows are selected (docs/modes.md); the modes a config may name decode its keys." })
  ),
  skip_empty: Schema.optional(
    Schema.Boolean.annotations({
      description: "When a run finds no rows: write nothing (no manifest, no _SUCCESS) and report `skipped`."
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
      description:
        "The largest size of a part (e.g. 256MiB, at least 64KiB): a part ends before the row that would make it larger, " +
        "so no part is larger but for a single row larger than this alone; parts are named _part{N}."
    })
  ),
  columns: Schema.optional(
    Schema.Record({
      key: Schema.String,
      value: Schema.Union(
        Schema.Struct({
          type: Schema.optional(Schema.String.annotations({ description: "Logical type, e.g. decimal(38,9), int64, string." })),
          mask: Schema.optional(MaskMethodSchema)
        }),
        Schema.String.annotations({ description: "Short form of { type: ... }: amount: decimal(18,2)." })
      )
    }).pipe(keysAreColumnNames).annotations({
      description:
        "Per-column type overrides and masks, e.g. amount: { type: decimal(18,2) } (or amount: decimal(18,2)), email: { mask: hmac_sha256 }."
    })
  ),
  allow_unmasked: Schema.optional(
    Schema.Array(ColumnName).annotations({
      description: "Columns whose names look personal (email, phone, …) exported unmasked on purpose: no note about them in plans and runs."
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
  table_format: Schema.optional(TableFormatConfig),
  ...ADVISORY_FIELDS
})
export type ExportCore = typeof ExportCore.Type

/** The most exports `parallel_exports` runs at once (`true` included). */
export const MAX_PARALLEL_EXPORTS = 16

export const TopLevel = Schema.Struct({
  source: Schema.Unknown.annotations({ description: "The database to read: { type: postgres, ... }." }),
  exports: Schema.Array(Schema.Unknown).annotations({ description: "The exports to run, in order." }),
  plugins: Schema.optional(
    Schema.Array(Schema.String).annotations({
      description: "Third-party plugin modules: npm package names or paths relative to this file."
    })
  ),
  telemetry: Schema.optional(TelemetryBlock),
  masking: Schema.optional(MaskingBlock),
  notifications: Schema.optional(NotificationsBlock),
  parallel_exports: Schema.optional(
    Schema.Union(
      Schema.Int.pipe(Schema.between(1, MAX_PARALLEL_EXPORTS, { message: () => `must be a whole number from 1 to ${MAX_PARALLEL_EXPORTS}, or true` })),
      Schema.Boolean
    ).annotations({
      description: `Exports run at once (default 1: one after another, in config order); true: all of them, up to ${MAX_PARALLEL_EXPORTS} (the Rust rivet's spelling). Each has its own source connection and lease.`
    })
  )
})

export const DEFAULT_BATCH_SIZE = 10_000
export const DEFAULT_FORMAT = "parquet"
