import { numbersEveryPart } from "../../config/partition.js"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ColumnRef, RowFilter, SourceQuery } from "../../core/plugin.js"
import type { ModeOf } from "../../config/model.js"
import { type BatchSchema, formatLogicalType } from "../../core/batch.js"
import { ConfigError } from "../../core/errors.js"
import { instantText, isOrderable, isTemporal } from "../../core/key-text.js"
import { partNamePattern, singleRunnerPartName } from "../../core/naming.js"
import type { ModePlan } from "../plan/model.js"
import { baseQuery, type ExportContext, outputSchemaOf, planningPrimitives, requireColumn } from "./context.js"
import { planFingerprint } from "./fingerprint.js"
import type { ModeOutcome, PreparedMode, RunJournal } from "./mode.js"
import { estimateOf, planHeader, plannedColumns, statementOf } from "./planning.js"
import { runAttempt } from "./attempt.js"

const DAY_MS = 86_400_000

/** What a single-runner mode resolved before running: its query (computed now, or taken from a plan) and plan details. */
interface SingleSetup {
  readonly fingerprint: string
  /** The statement's query; given a plan, with the plan's cursor or window bounds. */
  readonly queryOf: (plan?: ModePlan) => SourceQuery
  /** What the plan shows besides the statement (cursor position, window). */
  readonly details: Pick<ModePlan, "cursor" | "window">
  /** The output schema when preparing described the query already; otherwise the plan describes it. */
  readonly schema?: BatchSchema | undefined
  readonly track: ReadonlyArray<ColumnRef>
  readonly cursorOf?: (last: ReadonlyArray<string | undefined>) => ModeOutcome["cursor"]
}

/** Runs one query into `{export}_{date}_{time}_{ms}[_partN].{ext}` parts — full, incremental and time_window. */
const singleRun = (ctx: ExportContext, setup: SingleSetup): PreparedMode => ({
  checkpointed: false,
  fingerprint: setup.fingerprint,
  plan: Effect.gen(function* () {
    const query = setup.queryOf()
    const columns = yield* plannedColumns(ctx, setup.schema)
    return {
      ...planHeader(ctx, setup.fingerprint),
      statements: [statementOf(ctx, query)],
      ...(columns ? { columns } : {}),
      estimated_rows: yield* estimateOf(ctx, query),
      ...setup.details,
      naming: partNamePattern("single", ctx.spec.name, ctx.format.extension, numbersEveryPart(ctx.spec))
    }
  }),
  estimate: (plan?: ModePlan) => estimateOf(ctx, setup.queryOf(plan)),
  execute: (journal: RunJournal, plan?: ModePlan) =>
    Effect.gen(function* () {
      let openedAt: Date | undefined
      const { spec, format } = ctx
      const query = setup.queryOf(plan)
      const outcome = yield* runAttempt(ctx, {
        unit: { kind: "query", index: 0 },
        query,
        runId: journal.runId,
        track: setup.track,
        runStartedAt: journal.startedAt,
        keyOf: (part) => {
          openedAt ??= ctx.now()
          return singleRunnerPartName(spec.name, openedAt, format.extension, part, numbersEveryPart(spec))
        }
      })
      return {
        parts: outcome.parts,
        unrecorded: outcome.parts,
        schema: outcome.schema,
        sourceRows: outcome.sourceRows,
        cursor: setup.cursorOf?.(outcome.last),
        statements: [statementOf(ctx, query)]
      }
    })
})

export const prepareFull = (ctx: ExportContext): Effect.Effect<PreparedMode> =>
  Effect.succeed(
    singleRun(ctx, {
      fingerprint: planFingerprint(ctx, { mode: "full" }),
      queryOf: () => baseQuery(ctx.spec),
      details: {},
      track: []
    })
  )

/**
 * Rows past the stored cursor, in cursor order; the first run exports everything. With `cursor_lag` the run stops
 * at now − lag, so a row committed late with an earlier timestamp is still ahead of the cursor next time.
 */
export const prepareIncremental = Effect.fn("Modes.incremental")(function* (ctx: ExportContext, mode: ModeOf<"incremental">) {
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

/** Rows from UTC midnight `days_window` days ago until now. */
export const prepareTimeWindow = Effect.fn("Modes.timeWindow")(function* (ctx: ExportContext, mode: ModeOf<"time_window">) {
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
