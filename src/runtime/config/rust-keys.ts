/**
 * Keys of the Rust rivet's config that this Rivet does not have, with what to write instead. A migrated config hits
 * these first; a generic "did you mean" would point at an unrelated key (`meta_columns` → `key_columns`).
 */
const CONNECTION = "write the connection as url: postgres://user:password@host:5432/database (or url_env: VAR naming an environment variable that holds it)"
const NOT_SUPPORTED = "Rivet has no equivalent"

const TUNING = "Rivet has no tuning: block — batch_size sits on the export; statement_timeout_s and lock_timeout_s on source:"

const TOP_LEVEL: Readonly<Record<string, string>> = {
  notifications: `${NOT_SUPPORTED}: act on the exit code (0 ok, 1 config/permanent, 2 retryable, 3 integrity, 4 schema drift)`,
  parallel_exports: `${NOT_SUPPORTED}: exports run in order; use parallel: N inside a mode: chunked export`,
  parallel_export_processes: `${NOT_SUPPORTED}: exports run in order; use parallel: N inside a mode: chunked export`
}

const SOURCE: Readonly<Record<string, string>> = {
  tuning: TUNING,
  environment: `${NOT_SUPPORTED} (no tuning profiles) — set batch_size on the export, statement_timeout_s / lock_timeout_s on source:`,
  host: CONNECTION,
  port: CONNECTION,
  user: CONNECTION,
  database: CONNECTION,
  password: CONNECTION,
  password_env: CONNECTION,
  url_file: CONNECTION,
  tls: "put TLS in the URL: ?sslmode=verify-full (certificate checked; a private CA through NODE_EXTRA_CA_CERTS=<pem>) or ?sslmode=require (encrypted, not verified)"
}

const EXPORT: Readonly<Record<string, string>> = {
  tuning: TUNING,
  meta_columns: `${NOT_SUPPORTED}: add the columns in the query, e.g. query: SELECT *, now() AS _rivet_exported_at FROM orders`,
  compression_profile: "use compression: zstd | snappy | gzip | none, and compression_level",
  chunk_by_key: "use mode: keyset with key_columns: [<column>] (page_size rows per page)",
  chunk_count: `${NOT_SUPPORTED}: set chunk_size (key values per chunk)`,
  chunk_dense: `${NOT_SUPPORTED}: set chunk_size (key values per chunk), or use mode: keyset for equal-sized pages`,
  chunk_by_days: `${NOT_SUPPORTED}: chunk on an integer column with chunk_size, or use mode: keyset`,
  chunk_size_memory_mb: `${NOT_SUPPORTED}: set chunk_size (key values per chunk)`,
  chunk_max_attempts: `${NOT_SUPPORTED}: a failed chunked run with chunk_checkpoint: true is continued with rivet run --resume`,
  keyset_incremental: `${NOT_SUPPORTED}: use mode: incremental with cursor_column for append-only tables`,
  cursor_fallback_column: `${NOT_SUPPORTED}: export COALESCE(a, b) AS <name> in the query and use it as cursor_column`,
  incremental_cursor_mode: `${NOT_SUPPORTED}: export COALESCE(a, b) AS <name> in the query and use it as cursor_column`,
  time_column_type: `${NOT_SUPPORTED}: time_column must be a timestamp, timestamptz or date column (convert unix seconds in the query with to_timestamp())`,
  verify: "verification is a command here: rivet validate -c <config>, or rivet run --validate",
  parquet: "the Parquet row group size is row_group_size (rows) on the export",
  partition_by: `${NOT_SUPPORTED}: run one export per partition with a WHERE clause and its own destination`,
  partition_granularity: `${NOT_SUPPORTED}: run one export per partition with a WHERE clause and its own destination`,
  shape_drift_warn_factor: `${NOT_SUPPORTED}: on_schema_drift covers column name and type changes`
}

const lookup = (table: Readonly<Record<string, string>>, key: string): string | undefined =>
  Object.hasOwn(table, key) ? table[key] : undefined

/**
 * What to write instead of a key of the Rust rivet's config, by where it appears (`""`, `source`, `exports[0]`,
 * `exports[0].destination`), or undefined for any other key — plugin blocks keep the generic hints.
 */
export const rustKeyHint = (path: string, key: string, known: ReadonlyArray<string>): string | undefined => {
  if (path === "") return lookup(TOP_LEVEL, key)
  if (path === "source") return lookup(SOURCE, key)
  if (/^exports\[\d+\]$/.test(path)) return lookup(EXPORT, key)
  // The Rust rivet's local destination takes prefix: as a fallback for path:.
  if (/^exports\[\d+\]\.destination$/.test(path) && key === "prefix" && known.includes("path")) return "use path: for a local directory"
  return undefined
}
