/**
 * Keys and values of the Rust rivet's config that this Rivet does not have, with what to write instead. A migrated
 * config hits these first; a generic "did you mean" would point at an unrelated key (`tables` → `table`).
 * Keys this Rivet accepts but ignores (the Rust rivet's scheduling advice) are in advisory.ts.
 */
const NOT_SUPPORTED = "Rivet has no equivalent"

const LOAD = `Rivet does not load into warehouses: load the exported files with the warehouse's own loader (bq load, Snowflake COPY INTO), taking the file list from each export's manifest.json`

const TOP_LEVEL: Readonly<Record<string, string>> = {
  parallel_export_processes: "exports run in one process here: parallel_exports: N runs N of them at once",
  load: LOAD
}

const SOURCE: Readonly<Record<string, string>> = {
  mongo: "MongoDB is not a supported source: Rivet reads PostgreSQL (source.type: postgres); remove the mongo: block"
}

const EXPORT: Readonly<Record<string, string>> = {
  chunk_dense: `${NOT_SUPPORTED}: set chunk_size (key values per chunk), or use mode: keyset for equal-sized pages`,
  chunk_by_days: `${NOT_SUPPORTED}: chunk on an integer column with chunk_size, or use mode: keyset`,
  keyset_incremental: `${NOT_SUPPORTED}: use mode: incremental with cursor_column for append-only tables`,
  verify: "verification is a command here: rivet validate -c <config>, or rivet run --validate",
  partition_granularity: "Rivet puts the granularity in partition_by, after the column: partition_by: [created_at:day] (year, month, day or hour, UTC; docs/partitioning.md)",
  shape_drift_warn_factor: `${NOT_SUPPORTED}: on_schema_drift covers column name and type changes`,
  tables: "Rivet's mode: cdc reads one table per export, where tables: captured several through one change stream: write one export per table, each with table: <name>, mode: cdc and its own destination (and its own slot, rivet_<export> by default)",
  target: "it steered the Rust rivet's type report for one warehouse, which Rivet does not have: remove it (the Parquet types Rivet writes are listed in docs/formats/parquet.md)",
  load: LOAD
}

const DESTINATION: Readonly<Record<string, string>> = {
  credentials_file:
    "Rivet's destinations take no credentials file: an s3 destination reads its keys from access_key_env / secret_key_env, a profile of the shared AWS files from aws_profile (AWS_SHARED_CREDENTIALS_FILE moves those files), or the AWS default chain"
}

const QUALITY: Readonly<Record<string, string>> = {
  unique_max_entries: `${NOT_SUPPORTED} and none is needed: unique_columns is checked exactly with bounded memory (hashes spill to disk)`
}

/** `source.type` / `destination.type` values of the Rust rivet, for when no plugin of that type is loaded. */
const SOURCE_TYPES: Readonly<Record<string, string>> = {
  mongo: "MongoDB is not a supported source",
  mssql: "SQL Server is not a supported source"
}

const DESTINATION_TYPES: Readonly<Record<string, string>> = {
  gcs: "there is no gcs destination: write to local or s3, or use a destination plugin (plugins:)",
  azure: "there is no built-in azure destination: the example package plugins/rivet-sink-azure of the Rivet repository provides type: azure through plugins:"
}

const lookup = (table: Readonly<Record<string, string>>, key: string): string | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined

const EXPORT_PATH = /^exports\[\d+\]$/

/**
 * What to write instead of a key of the Rust rivet's config, by where it appears (`""`, `source`, `exports[0]`,
 * `exports[0].destination`, `exports[0].quality`), or undefined for any other key — plugin blocks keep the generic
 * hints. A key the block knows (`known`) is never one of these.
 */
export const rustKeyHint = (path: string, key: string, known: ReadonlyArray<string>): string | undefined => {
  if (known.includes(key)) return undefined
  if (path === "") return lookup(TOP_LEVEL, key)
  if (path === "source") return lookup(SOURCE, key)
  if (EXPORT_PATH.test(path)) return lookup(EXPORT, key)
  if (/^exports\[\d+\]\.quality$/.test(path)) return lookup(QUALITY, key)
  if (/^exports\[\d+\]\.destination$/.test(path)) {
    // The Rust rivet's local destination takes prefix: as a fallback for path:.
    if (key === "prefix" && known.includes("path")) return "use path: for a local directory"
    return lookup(DESTINATION, key)
  }
  return undefined
}

/** What to write instead of a value of the Rust rivet's config that fails to decode here (`compression: lz4`), or undefined. */
export const rustValueHint = (path: string, value: unknown): string | undefined => {
  const key = /\.([a-z_]+)$/.exec(path)?.[1]
  const owner = path.slice(0, path.length - (key?.length ?? 0) - 1)
  if (key === "partition_by" && EXPORT_PATH.test(owner) && typeof value === "string") {
    return `partition_by takes a list of columns, each with an optional :year, :month, :day or :hour: partition_by: [${value}] (the Rust rivet's partition_granularity: day becomes partition_by: [${value}:day])`
  }
  if (key === "row_hash" && /^exports\[\d+\]\.meta_columns$/.test(owner) && Array.isArray(value)) {
    return "a hash of chosen columns (the Rust rivet's row_hash: [columns]) is not supported: row_hash: true hashes every exported column; select only the columns to cover in the query"
  }
  return undefined
}

/**
 * The hint for a plugin `type` no loaded plugin has, when it names a source or destination of the Rust rivet
 * (`type: mongo`, `type: gcs`), or undefined. `available` lists the types that are loaded.
 */
export const rustTypeHint = (what: string, type: string, available: ReadonlyArray<string>): string | undefined => {
  const table = what === "source" ? SOURCE_TYPES : what === "destination" ? DESTINATION_TYPES : {}
  const found = lookup(table, type)
  return found === undefined ? undefined : `'${type}' is a ${what} type of the Rust rivet; ${found} (available: ${available.join(", ")})`
}

/** Every key and type of the Rust rivet that Rivet still refuses, where it stands, and the hint given for it. */
export const refusedRustKeys = (): ReadonlyArray<{ readonly at: string; readonly key: string; readonly hint: string }> => {
  const rows = (at: string, table: Readonly<Record<string, string>>) => Object.entries(table).map(([key, hint]) => ({ at, key, hint }))
  return [
    ...rows("(top level)", TOP_LEVEL),
    ...rows("source", SOURCE),
    ...rows("exports[]", EXPORT),
    ...rows("exports[].destination", DESTINATION),
    ...rows("exports[].quality", QUALITY),
    ...rows("source.type", SOURCE_TYPES),
    ...rows("exports[].destination.type", DESTINATION_TYPES)
  ]
}
