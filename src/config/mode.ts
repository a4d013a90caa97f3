import { ConfigError } from "../core/errors.js"
import { DEFAULT_CHUNK_SIZE, DEFAULT_PAGE_SIZE, type ExportCore, type ModeConfig, type ModeKind } from "./model.js"

/** Which mode each mode-specific key belongs to. */
export const KEY_MODES: Readonly<Record<string, ReadonlyArray<ModeKind>>> = {
  cursor_column: ["incremental"],
  cursor_fallback_column: ["incremental"],
  incremental_cursor_mode: ["incremental"],
  cursor_lag: ["incremental"],
  chunk_column: ["chunked"],
  chunk_size: ["chunked"],
  parallel: ["chunked"],
  chunk_checkpoint: ["chunked", "keyset"],
  chunk_max_attempts: ["chunked", "keyset"],
  key_columns: ["keyset"],
  page_size: ["keyset"],
  time_column: ["time_window"],
  days_window: ["time_window"]
}

const required = (path: string, key: string, mode: ModeKind, example: string) =>
  new ConfigError({ path: `${path}.${key}`, message: `is required with mode: ${mode}`, hint: `e.g. ${key}: ${example}` })

/**
 * `incremental_cursor_mode` (the Rust rivet's switch) must agree with `cursor_fallback_column`, which on its own
 * already means `coalesce`. Adds the disagreements to `problems`; true when there was one.
 */
const cursorProblems = (core: ExportCore, path: string, problems: Array<ConfigError>): boolean => {
  const before = problems.length
  if (core.incremental_cursor_mode === "coalesce" && core.cursor_fallback_column === undefined) {
    problems.push(
      new ConfigError({
        path: `${path}.incremental_cursor_mode`,
        message: "coalesce needs cursor_fallback_column, the column read where cursor_column is NULL",
        hint: "add it, e.g. cursor_fallback_column: created_at, or remove incremental_cursor_mode"
      })
    )
  }
  if (core.incremental_cursor_mode === "single_column" && core.cursor_fallback_column !== undefined) {
    problems.push(
      new ConfigError({
        path: `${path}.cursor_fallback_column`,
        message: "contradicts incremental_cursor_mode: single_column, which reads cursor_column alone",
        hint: "remove incremental_cursor_mode (a cursor_fallback_column means COALESCE(cursor_column, cursor_fallback_column)), or remove cursor_fallback_column"
      })
    )
  }
  return problems.length > before
}

/**
 * Builds an export's mode from its decoded keys. A key of another mode is an error rather than silently ignored
 * (it usually means the `mode:` line is missing); so is a missing required key.
 */
export const decodeMode = (
  core: ExportCore,
  path: string
): { readonly mode?: ModeConfig; readonly problems: ReadonlyArray<ConfigError> } => {
  const kind: ModeKind = core.mode ?? "full"
  const problems: Array<ConfigError> = []
  for (const [key, modes] of Object.entries(KEY_MODES)) {
    if ((core as Record<string, unknown>)[key] === undefined || modes.includes(kind)) continue
    problems.push(
      new ConfigError({
        path: `${path}.${key}`,
        message: `applies to mode: ${modes.join(" or ")} only, but this export's mode is ${kind}`,
        hint: `set mode: ${modes[0]} or remove ${key}`
      })
    )
  }
  const mode = ((): ModeConfig | undefined => {
    switch (kind) {
      case "full":
        return { kind }
      case "incremental":
        if (core.cursor_column === undefined) {
          problems.push(required(path, "cursor_column", kind, "updated_at"))
          return undefined
        }
        return cursorProblems(core, path, problems)
          ? undefined
          : { kind, cursorColumn: core.cursor_column, fallbackColumn: core.cursor_fallback_column, cursorLagMs: core.cursor_lag }
      case "time_window":
        if (core.time_column === undefined) problems.push(required(path, "time_column", kind, "created_at"))
        if (core.days_window === undefined) problems.push(required(path, "days_window", kind, "7"))
        if (core.time_column === undefined || core.days_window === undefined) return undefined
        return { kind, timeColumn: core.time_column, daysWindow: core.days_window }
      case "chunked":
        if (core.chunk_column === undefined && core.table === undefined) {
          problems.push(
            new ConfigError({
              path: `${path}.chunk_column`,
              message: "is required with mode: chunked when the export has a query instead of a table",
              hint: "name the integer column to split on, e.g. chunk_column: id"
            })
          )
          return undefined
        }
        return {
          kind,
          chunkColumn: core.chunk_column,
          chunkSize: core.chunk_size ?? DEFAULT_CHUNK_SIZE,
          parallel: core.parallel ?? 1,
          checkpoint: core.chunk_checkpoint ?? false,
          maxAttempts: core.chunk_max_attempts
        }
      case "keyset": {
        if (core.key_columns === undefined && core.table === undefined) {
          problems.push(
            new ConfigError({
              path: `${path}.key_columns`,
              message: "is required with mode: keyset when the export has a query instead of a table",
              hint: "name a unique, non-null key, e.g. key_columns: [tenant_id, id]"
            })
          )
          return undefined
        }
        const keys = core.key_columns === undefined ? undefined : typeof core.key_columns === "string" ? [core.key_columns] : core.key_columns
        if (keys && new Set(keys).size !== keys.length) {
          problems.push(new ConfigError({ path: `${path}.key_columns`, message: "lists a column twice", hint: undefined }))
        }
        return {
          kind,
          keyColumns: keys,
          pageSize: core.page_size ?? DEFAULT_PAGE_SIZE,
          checkpoint: core.chunk_checkpoint ?? false,
          maxAttempts: core.chunk_max_attempts
        }
      }
    }
  })()
  return problems.length > 0 || mode === undefined ? { problems } : { mode, problems }
}
