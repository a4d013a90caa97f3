import * as Schema from "effect/Schema"

/**
 * Every failure Rivet reports is one of these tagged errors. Each carries a message a user can act on;
 * the CLI prints `Error: <message>` and, when present, `Hint: <hint>`, and maps the tag to an exit code.
 */

/** The config (or a command-line argument) is wrong. `path` is the config path, e.g. `exports[1].destination.bucket`. */
export class ConfigError extends Schema.TaggedError<ConfigError>()("ConfigError", {
  path: Schema.String,
  message: Schema.String,
  hint: Schema.optional(Schema.String)
}) {}

/**
 * Reading from the source failed. `code`: the server's error code (PostgreSQL's SQLSTATE, e.g. `22P02`; MySQL's
 * error number, e.g. `1062`). `quoted`: the pieces of text from the database that `message` quotes for the user who
 * ran the command — the server's own error text, a value, a row key, a chunk's key range — which can hold row
 * values: telemetry gets `message` with each withheld, never this field (engine/telemetry/redact.ts).
 */
export class SourceError extends Schema.TaggedError<SourceError>()("SourceError", {
  source: Schema.String,
  message: Schema.String,
  hint: Schema.optional(Schema.String),
  retryable: Schema.Boolean,
  code: Schema.optional(Schema.String),
  quoted: Schema.optional(Schema.Array(Schema.String))
}) {}

/**
 * Encoding rows into the output format failed (or the schema cannot be encoded). `quoted`: the values `message`
 * quotes, withheld from telemetry (see `SourceError`).
 */
export class FormatError extends Schema.TaggedError<FormatError>()("FormatError", {
  format: Schema.String,
  message: Schema.String,
  hint: Schema.optional(Schema.String),
  quoted: Schema.optional(Schema.Array(Schema.String))
}) {}

/** Why a destination operation failed; plugins map their SDK's errors to one of these. */
export const SinkErrorReason = Schema.Literal(
  "NotFound",
  "PermissionDenied",
  "InvalidCredentials",
  "RateLimited",
  "Unavailable",
  "Conflict",
  "Unknown"
)
/** Why a destination operation failed (see the schema of the same name). */
export type SinkErrorReason = typeof SinkErrorReason.Type

/** A destination operation failed. `retryable` errors are retried by the runtime's policy. */
/**
 * What a store's client threw, kept on the SinkError for a program's own logging. Encoded (a worker thread sending
 * the error to the main thread) it becomes its text: an SDK error need not survive a structured clone.
 */
const ErrorCause = Schema.transform(Schema.String, Schema.Unknown, {
  strict: true,
  decode: (text) => text,
  encode: (cause) => describeCause(cause)
})

export class SinkError extends Schema.TaggedError<SinkError>()("SinkError", {
  plugin: Schema.String,
  operation: Schema.String,
  key: Schema.optional(Schema.String),
  reason: SinkErrorReason,
  message: Schema.String,
  hint: Schema.optional(Schema.String),
  retryable: Schema.Boolean,
  cause: Schema.optional(ErrorCause)
}) {}

/** What landed does not match what was written or promised (validation, quality gate). */
export class IntegrityError extends Schema.TaggedError<IntegrityError>()("IntegrityError", {
  message: Schema.String,
  hint: Schema.optional(Schema.String)
}) {}

/**
 * The state store could not be read or written, or holds something that stops the run. `retryable`: the same
 * call may succeed later (a locked SQLite file, a lost PostgreSQL connection, an export another run holds) — the
 * runtime retries state writes marked so, and the CLI exits 2.
 */
export class StateError extends Schema.TaggedError<StateError>()("StateError", {
  message: Schema.String,
  hint: Schema.optional(Schema.String),
  retryable: Schema.optional(Schema.Boolean)
}) {}

/** A loaded plugin is malformed or conflicts with another plugin. */
export class PluginError extends Schema.TaggedError<PluginError>()("PluginError", {
  plugin: Schema.String,
  message: Schema.String,
  hint: Schema.optional(Schema.String),
  /** For an unexpected defect: where it was thrown (its stack), which `--verbose` prints. */
  detail: Schema.optional(Schema.String),
  /** Values `message` quotes (a transform's row), withheld from telemetry (see `SourceError`). */
  quoted: Schema.optional(Schema.Array(Schema.String))
}) {}

/**
 * A source plugin's maker of `SourceError`s: the message prefixed with the export when known
 * (`export "orders": …`), not retryable unless said. `quoted` is what the message quotes from the database (see
 * `SourceError`): pass it whenever the message holds the server's text or a value read.
 */
export const sourceErrorMaker =
  (source: string) =>
  (
    context: { readonly exportName?: string | undefined },
    message: string,
    options: {
      readonly hint?: string | undefined
      readonly retryable?: boolean
      readonly code?: string | undefined
      readonly quoted?: string | undefined
    } = {}
  ): SourceError =>
    new SourceError({
      source,
      message: context.exportName === undefined ? message : `export "${context.exportName}": ${message}`,
      retryable: options.retryable ?? false,
      ...(options.hint === undefined ? {} : { hint: options.hint }),
      ...(options.code === undefined ? {} : { code: options.code }),
      ...(options.quoted === undefined || options.quoted === "" ? {} : { quoted: [options.quoted] })
    })

/** The stack of something thrown, when it has one: the `detail` of a PluginError made from a defect. */
export const defectDetail = (defect: unknown): { readonly detail?: string } =>
  defect instanceof Error && typeof defect.stack === "string" ? { detail: defect.stack } : {}

/** The export's output schema differs from its baseline and `on_schema_drift: fail` is set. */
export class SchemaDriftError extends Schema.TaggedError<SchemaDriftError>()("SchemaDriftError", {
  message: Schema.String,
  hint: Schema.optional(Schema.String)
}) {}

/**
 * Committing a run's parts to a table (Iceberg) failed: its metadata could not be read or is not one Rivet can
 * extend, the catalog refused or could not be reached, or other writers kept winning the commit. `retryable`: the
 * same commit may succeed later (a catalog database down, a lost race after the retries).
 */
export class TableCommitError extends Schema.TaggedError<TableCommitError>()("TableCommitError", {
  table: Schema.String,
  message: Schema.String,
  hint: Schema.optional(Schema.String),
  retryable: Schema.Boolean,
  cause: Schema.optional(ErrorCause)
}) {}

/** Any failure Rivet reports: switch on `_tag`; `exitCodeOf` gives the CLI's exit code. */
export type RivetError =
  | ConfigError
  | SourceError
  | FormatError
  | SinkError
  | IntegrityError
  | StateError
  | PluginError
  | SchemaDriftError
  | TableCommitError

/** Exit codes (DESIGN.md §5): 0 ok, 1 config/usage, 2 retryable failure, 3 integrity, 4 schema drift. */
export const exitCodeOf = (error: RivetError): number => {
  switch (error._tag) {
    case "ConfigError":
    case "PluginError":
      return 1
    case "SourceError":
    case "SinkError":
    case "StateError":
    case "TableCommitError":
      return error.retryable === true ? 2 : 1
    case "IntegrityError":
      return 3
    case "SchemaDriftError":
      return 4
    case "FormatError":
      return 1
  }
}

// Library messages are often wrapped over several lines (Node's native-module error, SDK messages); ours are one.
const LINE_BREAK = /[ \t]*(?:\r\n|\r|\n)\s*/g

/** The message of an unknown thrown value, on one line, for wrapping library failures into tagged errors. */
export const describeCause = (cause: unknown): string => {
  if (cause instanceof Error) return cause.message.replace(LINE_BREAK, " ")
  if (typeof cause === "string") return cause.replace(LINE_BREAK, " ")
  try {
    return JSON.stringify(cause)
  } catch {
    return String(cause)
  }
}
