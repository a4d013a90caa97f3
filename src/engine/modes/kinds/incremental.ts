import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { ColumnName } from "../../../config/model.js"
import { formatLogicalType } from "../../../core/batch.js"
import { DurationMs } from "../../../core/duration.js"
import { ConfigError } from "../../../core/errors.js"
import { instantText, isOrderable, isTemporal } from "../../../core/key-text.js"
import type { ColumnRef, RowFilter } from "../../../core/plugin.js"
import { baseQuery, type ExportContext, outputSchemaOf, planningPrimitives, requireColumn } from "../context.js"
import { requiredKey } from "../../../config/mode.js"
import { defineMode } from "../define.js"
import { planFingerprint } from "../fingerprint.js"
import { singleRun } from "../single.js"

const keys = Schema.Struct({
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
})

interface IncrementalSettings {
  readonly kind: "incremental"
  readonly cursorColumn: string
  /** The cursor is `COALESCE(cursorColumn, fallbackColumn)`: rows whose cursor column is NULL use this one. */
  readonly fallbackColumn?: string | undefined
  readonly cursorLagMs?: number | undefined
}

/**
 * `incremental_cursor_mode` (the Rust rivet's switch) must agree with `cursor_fallback_column`, which on its own
 * already means `coalesce`.
 */
const cursorModeProblems = (decoded: typeof keys.Type, path: string): ReadonlyArray<ConfigError> => [
  ...(decoded.incremental_cursor_mode === "coalesce" && decoded.cursor_fallback_column === undefined
    ? [
        new ConfigError({
          path: `${path}.incremental_cursor_mode`,
          message: "coalesce needs cursor_fallback_column, the column read where cursor_column is NULL",
          hint: "add it, e.g. cursor_fallback_column: created_at, or remove incremental_cursor_mode"
        })
      ]
    : []),
  ...(decoded.incremental_cursor_mode === "single_column" && decoded.cursor_fallback_column !== undefined
    ? [
        new ConfigError({
          path: `${path}.cursor_fallback_column`,
          message: "contradicts incremental_cursor_mode: single_column, which reads cursor_column alone",
          hint: "remove incremental_cursor_mode (a cursor_fallback_column means COALESCE(cursor_column, cursor_fallback_column)), or remove cursor_fallback_column"
        })
      ]
    : [])
]

/**
 * Rows past the stored cursor, in cursor order; the first run exports everything. With `cursor_lag` the run stops
 * at now − lag, so a row committed late with an earlier timestamp is still ahead of the cursor next time.
 */
const prepareIncremental = Effect.fn("Modes.incremental")(function* (ctx: ExportContext, mode: IncrementalSettings) {
  const { describe } = yield* planningPrimitives(ctx)
  const base = baseQuery(ctx.spec)
  const description = yield* describe(base)
  const column = yield* requireColumn(ctx, description, mode.cursorColumn, "cursor_column")
  const type = formatLogicalType(column.type)
  if (!isOrderable(column.type)) {
    return yield* new ConfigError({
      path: `export '${ctx.spec.name}'.cursor_column`,
      message: `column '${column.name}' is ${type}, which cannot order rows`,
      hint: "use an integer, decimal, text, uuid, date or timestamp column"
    })
  }
  // With a fallback the cursor is COALESCE(cursor, fallback): in the filter, the order and the stored position,
  // which is labelled with the expression so that a change of either column starts a new cursor.
  let cursorRef: ColumnRef = column.name
  let label = column.name
  if (mode.fallbackColumn !== undefined) {
    const fallback = yield* requireColumn(ctx, description, mode.fallbackColumn, "cursor_fallback_column")
    if (formatLogicalType(fallback.type) !== type) {
      return yield* new ConfigError({
        path: `export '${ctx.spec.name}'.cursor_fallback_column`,
        message: `column '${fallback.name}' is ${formatLogicalType(fallback.type)} but cursor_column '${column.name}' is ${type}: the coalesced cursor needs one type`,
        hint: `cast one of them in the query, e.g. SELECT …, ${fallback.name}::${column.sourceType ?? type} AS ${fallback.name}`
      })
    }
    cursorRef = { _tag: "Coalesce", columns: [column.name, fallback.name] }
    label = `COALESCE(${column.name}, ${fallback.name})`
  }
  const schema = yield* outputSchemaOf(ctx, description.schema)
  const stored = yield* ctx.state.cursor(ctx.spec.name)
  const previous = Option.getOrUndefined(stored)
  let after: string | null = null
  if (previous?.column === label) {
    after = previous.value
  } else if (previous !== undefined) {
    yield* ctx.reporter.notice(
      ctx.spec.name,
      `the stored cursor is on column '${previous.column}', not '${label}': exporting every row once and starting a new cursor`
    )
  }
  let until: string | null = null
  if (mode.cursorLagMs !== undefined) {
    if (!isTemporal(column.type)) {
      return yield* new ConfigError({
        path: `export '${ctx.spec.name}'.cursor_lag`,
        message: `needs a timestamp or date cursor, but '${column.name}' is ${type}`,
        hint: "remove cursor_lag, or use a timestamp cursor_column"
      })
    }
    until = instantText(column.type, new Date(ctx.now().getTime() - mode.cursorLagMs))
  }
  const cursor = { column: label, stored: previous ?? null, after, until }
  return singleRun(ctx, {
    fingerprint: planFingerprint(ctx, { mode: "incremental", cursorColumn: label, cursorLagMs: mode.cursorLagMs ?? null }),
    // A plan's bounds were computed when it was made; `run --plan` has checked its stored cursor is still the same.
    queryOf: (plan) => {
      const bounds = plan?.cursor ?? cursor
      const where: Array<RowFilter> = []
      if (bounds.after !== null) where.push({ _tag: "After", columns: [cursorRef], values: [bounds.after] })
      if (bounds.until !== null) where.push({ _tag: "AtMost", column: cursorRef, value: bounds.until })
      return { ...base, where, orderBy: [cursorRef] }
    },
    details: { cursor },
    schema,
    track: [cursorRef],
    cursorOf: ([last]) =>
      last === undefined
        ? previous?.column === label
          ? previous
          : undefined
        : { column: label, value: last, type }
  })
})

export const incrementalMode = defineMode({
  kind: "incremental",
  summary: "incremental (rows past the stored cursor)",
  keys,
  required: { keys: ["cursor_column"] },
  tracksCursor: true,
  read: (decoded, { path }) => {
    if (decoded.cursor_column === undefined) return Either.left([requiredKey(path, "cursor_column", "incremental", "updated_at")])
    const problems = cursorModeProblems(decoded, path)
    if (problems.length > 0) return Either.left(problems)
    return Either.right({
      kind: "incremental" as const,
      cursorColumn: decoded.cursor_column,
      fallbackColumn: decoded.cursor_fallback_column,
      cursorLagMs: decoded.cursor_lag
    })
  },
  behaviour: (settings) => ({ prepare: (ctx) => prepareIncremental(ctx, settings), rowKeyColumns: [settings.cursorColumn] })
})
