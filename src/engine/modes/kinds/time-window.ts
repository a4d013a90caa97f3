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

})

interface TimeWindowSettings {
  readonly kind: "time_window"
  readonly timeColumn: string
  readonly daysWindow: number
}

/** Rows from UTC midnight `days_window` days ago until now. */
const prepareTimeWindow = Effect.fn("Modes.timeWindow")(function* (ctx: ExportContext, mode: TimeWindowSettings) {
  const { describe } = yield* planningPrimitives(ctx)
  const base = baseQuery(ctx.spec)
  const description = yield* describe(base)
  const column = yield* requireColumn(ctx, description, mode.timeColumn, "time_column")
  if (!isTemporal(column.type)) {
    return yield* new ConfigError({
      path: `export '${ctx.spec.name}'.time_column`,
      message: `column '${column.name}' is ${formatLogicalType(column.type)}; a time window needs a timestamp or date column`,
      hint: "name a timestamp, timestamptz or date column"
    })
  }
  const now = ctx.now()
  const midnight = new Date(Math.floor(now.getTime() / DAY_MS) * DAY_MS - mode.daysWindow * DAY_MS)
  const window = { column: column.name, from: instantText(column.type, midnight), to: instantText(column.type, now) }
  return singleRun(ctx, {
    fingerprint: planFingerprint(ctx, { mode: "time_window", timeColumn: column.name, daysWindow: mode.daysWindow }),
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
    return Either.right({ kind: "time_window" as const, timeColumn, daysWindow })
  },
  behaviour: (settings) => ({ prepare: (ctx) => prepareTimeWindow(ctx, settings) })
})
