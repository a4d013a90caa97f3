import type { FormatPlugin, SinkPlugin, SourcePlugin } from "../core/plugin.js"

type Loader<P> = () => Promise<P>

/**
 * Built-in plugins, loaded on first use: a run that only writes local files never loads the AWS SDK.
 * The casts widen each plugin's own config type to the registry's uniform view.
 */
export const builtinSources: Readonly<Record<string, Loader<SourcePlugin>>> = {
  postgres: () => import("../plugins/sources/postgres/index.js").then((m) => m.default as unknown as SourcePlugin),
  mysql: () => import("../plugins/sources/mysql/index.js").then((m) => m.default as unknown as SourcePlugin)
}

export const builtinFormats: Readonly<Record<string, Loader<FormatPlugin>>> = {
  parquet: () => import("../plugins/formats/parquet/index.js").then((m) => m.default as unknown as FormatPlugin),
  csv: () => import("../plugins/formats/csv/index.js").then((m) => m.default as unknown as FormatPlugin),
  ndjson: () => import("../plugins/formats/ndjson/index.js").then((m) => m.default as unknown as FormatPlugin)
}

export const builtinSinks: Readonly<Record<string, Loader<SinkPlugin>>> = {
  local: () => import("../plugins/sinks/local/index.js").then((m) => m.default as unknown as SinkPlugin),
  stdout: () => import("../plugins/sinks/stdout/index.js").then((m) => m.default as unknown as SinkPlugin),
  s3: () => import("../plugins/sinks/s3/index.js").then((m) => m.default as unknown as SinkPlugin)
}
