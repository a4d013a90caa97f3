import type * as Schema from "effect/Schema"
import type * as Types from "effect/Types"
import type { ModeDefinition } from "./config/mode.js"
import type { MODES } from "./engine/modes/kinds/list.js"
import type { CsvConfig } from "./plugins/formats/csv/config.js"
import type { NdjsonConfig } from "./plugins/formats/ndjson/config.js"
import type { ParquetConfig } from "./plugins/formats/parquet/config.js"
import type { ExportCore, TopLevel } from "./config/model.js"
import type { LocalConfig } from "./plugins/sinks/local/config.js"
import type { S3Config } from "./plugins/sinks/s3/config.js"
import type { StdoutConfig } from "./plugins/sinks/stdout/config.js"
import type { MysqlConfig } from "./plugins/sources/mysql/config.js"
import type { PostgresConfig } from "./plugins/sources/postgres/config.js"

/**
 * The type of a config given in code, generated from the same schemas that decode the YAML file: an editor
 * completes every key, and a misspelt key or a value of the wrong type fails to compile. Third-party plugins
 * contribute their blocks: `RivetConfigInput<typeof folderSink>` accepts `destination: { type: "folder", … }` with
 * the keys of that plugin's config schema (its `type` must be a literal, as `define*` infer it).
 */
export interface AnyPluginValue {
  readonly kind: "source" | "format" | "sink"
  readonly type: string
  readonly config: unknown
}

/**
 * A plugin the config loads by its `plugins:` list (a module path or package name), described for the type system:
 * its kind, `type` and block keys. `runExports<LoadedPlugin<"format", "arrow">>({ plugins: ["rivet-format-arrow"], … })`.
 */
export interface LoadedPlugin<Kind extends AnyPluginValue["kind"], Type extends string, Keys extends object = object> {
  readonly kind: Kind
  readonly type: Type
  readonly config: Schema.Schema<Keys, Keys>
}

/** A block's keys as written in YAML; a schema of no keys (a record of `never`) allows none besides the type. */
type Keys<S> = S extends Schema.Schema<infer _A, infer I, infer _R> ? (string extends keyof I ? unknown : I) : never

/** A plugin's block: its `type:` (or `format:`) and the keys of its config schema. */
type Block<P extends AnyPluginValue, Key extends string> = P extends AnyPluginValue
  ? { readonly [K in Key]: P["type"] } & Keys<P["config"]>
  : never

type Of<Kind, P extends AnyPluginValue> = Extract<P, { readonly kind: Kind }>

type BuiltinSource =
  | ({ readonly type: "postgres" } & typeof PostgresConfig.Encoded)
  | ({ readonly type: "mysql" } & typeof MysqlConfig.Encoded)
type BuiltinSink =
  | ({ readonly type: "local" } & typeof LocalConfig.Encoded)
  | ({ readonly type: "s3" } & typeof S3Config.Encoded)
  | ({ readonly type: "stdout" } & Keys<typeof StdoutConfig>)
/** The format's keys sit beside the export's own; `format` may be left out for Parquet (the default). */
type BuiltinFormat =
  | ({ readonly format?: "parquet" } & typeof ParquetConfig.Encoded)
  | ({ readonly format: "csv" } & typeof CsvConfig.Encoded)
  | ({ readonly format: "ndjson" } & typeof NdjsonConfig.Encoded)

type Mode = (typeof MODES)[number]
/** `mode:` and the keys of every mode (decoding refuses a key of another mode than the one named). */
type ModeInput = { readonly mode?: Mode["kind"] } & Types.UnionToIntersection<
  Mode extends ModeDefinition<string, infer S> ? Schema.Schema.Encoded<S> : never
>

/** One entry of `exports:`: the export's keys, its mode's, its format's and its destination block. */
export type ExportInput<P extends AnyPluginValue = never> = Omit<typeof ExportCore.Encoded, "format" | "destination" | "mode"> &
  ModeInput &
  (BuiltinFormat | Block<Of<"format", P>, "format">) & {
    readonly destination: BuiltinSink | Block<Of<"sink", P>, "type">
  }

/** A whole config given in code, shaped like the YAML file. `P`: the plugins passed in code, if any. */
export type RivetConfigInput<P extends AnyPluginValue = never> = Omit<typeof TopLevel.Encoded, "source" | "exports"> & {
  readonly source: BuiltinSource | Block<Of<"source", P>, "type">
  readonly exports: ReadonlyArray<ExportInput<P>>
}

/**
 * Returns `config` unchanged: a `.ts` config written as `defineConfig({ … })` is checked against the schemas as
 * you type. Give the plugins you pass in code as the type argument: `defineConfig<typeof folderSink>({ … })`.
 */
export const defineConfig = <P extends AnyPluginValue = never>(config: RivetConfigInput<P>): RivetConfigInput<P> => config
