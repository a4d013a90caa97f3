import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { ColumnName } from "../../../config/model.js"
import { formatLogicalType } from "../../../core/batch.js"
import { ConfigError } from "../../../core/errors.js"
import { instantText, isTemporal } from "../../../core/key-text.js"
import { baseQuery, type ExportContext, outputSchemaOf, planningPrimitives, requireColumn } from "../context.js"
import { requiredKey } from "../../../config/mode.js"
import { defineMode } from "../define.js"
import { planFingerprint } from "../fingerprint.js"
import { singleRun } from "../single.js"

const DAY_MS = 86_400_000

const keys = Schema.Struct({
  time_column: Schema.optional(
    ColumnName.annotations({ description: "time_window: the timestamp or date column the window applies to." })
  ),
  days_window: Schema.optional(
    Schema.Int.pipe(Schema.between(0, 36_500, { message: () => "must be a whole number of days from 0 to 36500" })).annotations({
      description: "time_window: export rows from UTC midnight this many days ago until now (0 = today)."
    })
  ),
  time_column_type: Schema.optional(
    Schema.Literal("timestamp", "unix").annotations({
      description:
        "time_window: `timestamp` (default): time_column is a timestamp or date column; `unix` (the Rust rivet's spelling): an integer column of seconds since 1970-01-01 UTC."
    })
  )
})

interface TimeWindowSettings {
  readonly kind: "time_window"
  readonly timeColumn: string
  readonly daysWindow: number
  /** `time_column_type: unix`: the column holds whole seconds since the epoch. */
  readonly unixSeconds: boolean
}

const INTEGER_KINDS = new Set(["int16", "int32", "int64"])

/** Rows from UTC midnight `days_window` days ago until now. */
const prepareTimeWindow = Effect.fn("Modes.timeWindow")(function* (ctx: ExportContext, mode: TimeWindowSettings) {
  const { describe } = yield* planningPrimitives(ctx)
  const base = baseQuery(ctx.spec)
  const description = yield* describe(base)
  const column = yield* requireColumn(ctx, description, mode.timeColumn, "time_column")
  if (mode.unixSeconds && !(INTEGER_KINDS.has(column.type.kind) || (column.type.kind === "decimal" && column.type.scale === 0))) {
    return yield* new ConfigError({
      path: `export '${ctx.spec.name}'.time_column`,
      message: `column '${column.name}' is ${formatLogicalType(column.type)}; time_column_type: unix needs an integer column of seconds since 1970-01-01 UTC`,
      hint: "name an integer column, or remove time_column_type for a timestamp or date column"
    })
  }
  if (!mode.unixSeconds && !isTemporal(column.type)) {
    return yield* new ConfigError({
      path: `export '${ctx.spec.name}'.time_column`,
      message: `column '${column.name}' is ${formatLogicalType(column.type)}; a time window needs a timestamp or date column`,
      hint: "name a timestamp, timestamptz or date column"
    })
  }
  const now = ctx.now()
  const midnight = new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS - mode.daysWindow * DAY_MS)
  const bound = (instant: Date) => (mode.unixSeconds ? String(Math.floor(instant.getTime() / 1000)) : instantText(column.type, instant))
  const window = { column: column.name, from: bound(midnight), to: bound(now) }
  return singleRun(ctx, {
    fingerprint: planFingerprint(ctx, { mode: "time_window", timeColumn: column.name, daysWindow: mode.daysWindow, ...(mode.unixSeconds ? { unix: true } : {}) }),
    queryOf: (plan) => {
      const { from, to } = plan?.window ?? window
      return {
        ...base,
        where: [
          { _tag: "AtLeast", column: column.name, value: from },
          { _tag: "AtMost", column: column.name, value: to }
        ]
      }
    },
    details: { window },
    schema: yield* outputSchemaOf(ctx, description.schema),
    track: []
  })
})

export const timeWindowMode = defineMode({
  kind: "time_window",
  summary: "time_window (the last N days)",
  keys,
  required: { keys: ["time_column", "days_window"] },
  read: (decoded, { path }) => {
    const { time_column: timeColumn, days_window: daysWindow } = decoded
    if (timeColumn === undefined || daysWindow === undefined) {
      return Either.left([
        ...(timeColumn === undefined ? [requiredKey(path, "time_column", "time_window", "created_at")] : []),
        ...(daysWindow === undefined ? [requiredKey(path, "days_window", "time_window", "7")] : [])
      ])
    }
    return Either.right({ kind: "time_window" as const, timeColumn, daysWindow, unixSeconds: decoded.time_column_type === "unix" })
  },
  behaviour: (settings) => ({ prepare: (ctx) => prepareTimeWindow(ctx, settings) })
})
