import type { AnyFormatPlugin, AnySinkPlugin, AnySourcePlugin } from "../core/plugin.js"

type Loader<P> = () => Promise<P>

/**
 * Built-in plugins, loaded on first use: a run that only writes local files never loads the AWS SDK. Each plugin keeps
 * its own config type; the `Any*Plugin` views take it as it is (core/plugin/any.ts).
 */
export const builtinSources: Readonly<Record<string, Loader<AnySourcePlugin>>> = {
  postgres: () =>
    Promise.all([import("../plugins/sources/postgres/index.js"), import("./embedded-source.js")]).then(
      ([m, embedded]) => embedded.withEmbeddedServer(m.default)
    ),
  mysql: () => import("../plugins/sources/mysql/index.js").then((m) => m.default)
}

export const builtinFormats: Readonly<Record<string, Loader<AnyFormatPlugin>>> = {
  parquet: () => import("../plugins/formats/parquet/index.js").then((m) => m.default),
  csv: () => import("../plugins/formats/csv/index.js").then((m) => m.default),
  ndjson: () => import("../plugins/formats/ndjson/index.js").then((m) => m.default)
}

export const builtinSinks: Readonly<Record<string, Loader<AnySinkPlugin>>> = {
  local: () => import("../plugins/sinks/local/index.js").then((m) => m.default),
  stdout: () => import("../plugins/sinks/stdout/index.js").then((m) => m.default),
  s3: () => import("../plugins/sinks/s3/index.js").then((m) => m.default)
}
