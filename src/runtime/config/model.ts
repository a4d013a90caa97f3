import * as Schema from "effect/Schema"
import type { LogicalType } from "../batch.js"
import type { FormatPlugin, SinkPlugin, SourcePlugin } from "../plugin.js"
import { ByteSize } from "../size.js"

/** A plugin value with its decoded config block. */
export interface Configured<P> {
  readonly plugin: P
  readonly config: unknown
}

/** A fully decoded config: every plugin chosen and every block decoded by its plugin's schema. */
export interface RivetConfig {
  /** Directory of the config file; relative paths resolve against it. */
  readonly configDir: string
  /** Where the config came from (file path or "(inline)"), for messages. */
  readonly origin: string
  readonly source: Configured<SourcePlugin>
  readonly exports: ReadonlyArray<ExportConfig>
}

export interface ExportConfig {
  readonly name: string
  readonly table?: { readonly schema?: string | undefined; readonly name: string } | undefined
  readonly query?: string | undefined
  readonly mode: "full"
  readonly batchSize: number
  readonly maxFileSize?: number | undefined
  readonly columnTypes: ReadonlyMap<string, LogicalType>
  readonly format: Configured<FormatPlugin>
  readonly destination: Configured<SinkPlugin>
}

const SAFE_NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]*$/
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_$]*$/

export const ExportName = Schema.String.pipe(
  Schema.filter((name) =>
    SAFE_NAME.test(name) && !name.includes("..")
      ? true
      : `invalid export name ${JSON.stringify(name)}: use letters, digits, '_', '-' and '.', starting with a letter or digit (it becomes part of file names)`
  )
).annotations({ description: "Unique name of the export; used in file names, so letters, digits, _ - . only." })

export const TableName = Schema.String.pipe(
  Schema.filter((table) => {
    const parts = table.split(".")
    return parts.length <= 2 && parts.every((part) => IDENTIFIER.test(part))
      ? true
      : `invalid table name ${JSON.stringify(table)}: use 'table' or 'schema.table' with plain identifiers (write a query: for anything else)`
  })
).annotations({ description: "Table to export, `table` or `schema.table`; becomes SELECT * FROM it." })

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
    Schema.Literal("full").annotations({ description: "Export mode. `full` re-exports every row on each run." })
  ),
  format: Schema.optional(
    Schema.String.annotations({ description: "Output format plugin: parquet (default), csv, ndjson." })
  ),
  batch_size: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 1_000_000)).annotations({
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
      value: Schema.Struct({
        type: Schema.String.annotations({ description: "Logical type, e.g. decimal(38,9), int64, string." })
      })
    }).annotations({ description: "Per-column type overrides, e.g. for unbounded numeric columns." })
  ),
  destination: Schema.Unknown.annotations({ description: "Where the files go: { type: local | stdout | s3, ... }." })
})
export type ExportCore = typeof ExportCore.Type

export const TopLevel = Schema.Struct({
  source: Schema.Unknown.annotations({ description: "The database to read: { type: postgres, ... }." }),
  exports: Schema.Array(Schema.Unknown).annotations({ description: "The exports to run, in order." }),
  plugins: Schema.optional(
    Schema.Array(Schema.String).annotations({
      description: "Third-party plugin modules: npm package names or paths relative to this file."
    })
  )
})

export const DEFAULT_BATCH_SIZE = 10_000
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
