import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type Batch, batchFromColumns, type BatchSchema, formatLogicalType } from "../../../core/batch.js"
import { SourceError } from "../../../core/errors.js"
import type { SourceQuery, SourceResult } from "../../../core/plugin.js"
import { describeFields, type TableInfo, tableInfo } from "./catalog.js"
import { BadValue, type ColumnDecoder, columnDecoder, ZeroDate } from "./decode.js"
import { connectionClosed, type ErrorContext, fromMysql, sourceError } from "./errors.js"
import type { Session } from "./session.js"
import {
  baseQueryOf,
  describeStatement,
  mysqlTimestampText,
  quoteIdent,
  renderStatement,
  type Statement,
  stripTerminator
} from "./statement.js"
import { type ColumnPlan, type FieldInfo, planColumn, type Problem } from "./types.js"

/** A batch is cut at `batchSize` rows or at about this many bytes, whichever comes first. */
const BATCH_BYTES = 8 * 1024 * 1024

const READING = "reading rows"

/** Maps described columns to column plans with the export's overrides; fails listing every problem. */
export const planColumns = (
  context: ErrorContext,
  query: SourceQuery,
  fields: ReadonlyArray<FieldInfo>,
  table: TableInfo
): Effect.Effect<ReadonlyArray<ColumnPlan>, SourceError> => {
  if (fields.length === 0) return Effect.fail(sourceError(context, "the query returns no columns"))
  const names = new Set(fields.map((field) => field.name))
  const unknown = [...query.columnTypes.keys()].filter((name) => !names.has(name))
  if (unknown.length > 0) {
    return Effect.fail(
      sourceError(context, `\`columns:\` overrides name ${unknown.map((name) => `"${name}"`).join(", ")}, which the query does not return`, {
        hint: `the query returns: ${[...names].join(", ")}`
      })
    )
  }
  const plans: Array<ColumnPlan> = []
  const problems: Array<{ column: string; problem: Problem }> = []
  for (const field of fields) {
    const planned = planColumn(field, table.jsonColumns.has(field.name), query.columnTypes.get(field.name))
    if ("plan" in planned) plans.push(planned.plan)
    else problems.push({ column: field.name, problem: planned.problem })
  }
  if (problems.length === 0) return Effect.succeed(plans)
  return Effect.fail(
    sourceError(
      context,
      `${problems.length} column(s) cannot be exported as they are:\n` +
        problems.map(({ column, problem }) => `  • ${column}: ${problem.reason}`).join("\n"),
      { hint: problems.map(({ column, problem }) => `${column}: ${problem.fix}`).join("\n") }
    )
  )
}

export const schemaOf = (plans: ReadonlyArray<ColumnPlan>): BatchSchema => ({
  columns: plans.map((plan) => ({ name: plan.name, type: plan.type, sourceType: plan.sourceType }))
})

/**
 * The plans of a query's columns on an open session: its base query (without filters, order and limit: the same
 * columns) described, then mapped through the catalog.
 */
export const planQuery = (
  session: Session,
  query: SourceQuery,
  context: ErrorContext
): Effect.Effect<{ readonly plans: ReadonlyArray<ColumnPlan>; readonly table: TableInfo }, SourceError> =>
  Effect.gen(function* () {
    const fields = yield* describeFields(session, describeStatement(renderStatement(baseQueryOf(query))), context)
    const table = yield* tableInfo(session, query, context)
    return { plans: yield* planColumns(context, query, fields, table), table }
  })

/** The statement for a query, with filter values on timestamp columns in MySQL's literal form. */
export const statementFor = (query: SourceQuery, plans: ReadonlyArray<ColumnPlan>): Statement => {
  const temporal = new Set(plans.filter((plan) => plan.decode === "timestamp" || plan.decode === "timestamptz").map((plan) => plan.name))
  return renderStatement(query, (value, column) => (temporal.has(column) ? mysqlTimestampText(value) : value))
}

/**
 * MariaDB prints FLOAT with 6 significant digits, which loses float32 values; `+ 0e0` widens them to DOUBLE in SQL,
 * whose text is exact (and the float32 value is recovered exactly from it). The statement is wrapped only then.
 */
const widenFloats = (statement: Statement, plans: ReadonlyArray<ColumnPlan>): Statement => {
  if (!plans.some((plan) => plan.decode === "float32")) return statement
  const columns = plans.map((plan) => {
    const column = `_rivet_f.${quoteIdent(plan.name)}`
    return plan.decode === "float32" ? `${column} + 0e0 AS ${quoteIdent(plan.name)}` : column
  })
  return { text: `SELECT ${columns.join(", ")} FROM (${stripTerminator(statement.text)}\n) AS _rivet_f`, params: statement.params }
}

/** Rows decoded into batches as the server sends them; the socket is paused while a batch waits to be taken. */
class RowPump {
  private readonly ready: Array<Batch> = []
  private decoders: Array<ColumnDecoder>
  private rows = 0
  private seen = 0
  private ended = false
  private failure: SourceError | undefined
  private wake: (() => void) | undefined

  constructor(
    private readonly session: Session,
    private readonly plans: ReadonlyArray<ColumnPlan>,
    private readonly schema: BatchSchema,
    private readonly batchSize: number,
    private readonly keyColumns: ReadonlyArray<number>,
    private readonly zeroDatesAsNull: boolean,
    private readonly context: ErrorContext
  ) {
    this.decoders = this.freshDecoders()
  }

  private freshDecoders(): Array<ColumnDecoder> {
    return this.plans.map((plan) => columnDecoder(plan, Math.min(this.batchSize, 4096)))
  }

  start(statement: Statement): void {
    this.session.busy = true
    const query = this.session.connection.query({
      sql: statement.text,
      values: [...statement.params],
      rowsAsArray: true,
      typeCast: (field) => field.buffer()
    })
    // A connection killed or dropped mid-result is reported on the connection, not on the query (mysql2 3.x).
    const connection = this.session.connection
    const lost = (error?: unknown) => {
      if (!this.ended) this.fail(error === undefined ? connectionClosed(this.context, READING) : fromMysql(error, this.context, READING))
    }
    const onEnd = () => lost()
    connection.on("error", lost)
    connection.once("end", onEnd)
    query.on("end", () => {
      connection.off("error", lost)
      connection.off("end", onEnd)
    })
    query.on("fields", (fields: ReadonlyArray<unknown>) => {
      if (fields.length !== this.plans.length) {
        this.fail(sourceError(this.context, `the query returned ${fields.length} columns where ${this.plans.length} were described`))
      }
    })
    query.on("result", (row: unknown) => this.onRow(row as ReadonlyArray<Buffer | null>))
    query.on("error", (error: unknown) => this.fail(fromMysql(error, this.context, READING)))
    query.on("end", () => {
      if (this.failure !== undefined) return
      this.flush()
      this.ended = true
      this.session.busy = false
      this.signal()
    })
  }

  private onRow(row: ReadonlyArray<Buffer | null>): void {
    if (this.failure !== undefined) return
    this.seen++
    for (let c = 0; c < this.decoders.length; c++) {
      const bytes = row[c] ?? null
      try {
        this.decoders[c]!.append(bytes)
      } catch (cause) {
        if (cause instanceof ZeroDate && this.zeroDatesAsNull) {
          this.decoders[c]!.appendNull()
          continue
        }
        return this.fail(this.valueError(c, row, cause))
      }
    }
    this.rows++
    if (this.rows >= this.batchSize || ((this.rows & 255) === 0 && this.bytes() >= BATCH_BYTES)) {
      this.flush()
      this.session.connection.pause()
    }
  }

  private bytes(): number {
    let total = 0
    for (const decoder of this.decoders) total += decoder.byteLength()
    return total
  }

  private valueError(column: number, row: ReadonlyArray<Buffer | null>, cause: unknown): SourceError {
    const plan = this.plans[column]!
    const key = this.keyColumns.map((c) => `${this.plans[c]!.name} = ${row[c]?.toString("utf8") ?? "NULL"}`).join(", ")
    const where = `row ${this.seen}${key === "" ? "" : ` (${key})`}`
    // The value and the row's key are read from the database: quoted, so telemetry gets neither.
    if (cause instanceof ZeroDate) {
      return sourceError(this.context, `column "${plan.name}" (${plan.sourceType}) holds the zero date '${cause.message}' at ${where}`, {
        quoted: `'${cause.message}' at ${where}`,
        hint: `zero dates have no ${formatLogicalType(plan.type)} value: set zero_dates: null in the source block to export them as NULL, or fix the data (UPDATE … SET ${quoteIdent(plan.name)} = NULL WHERE …)`
      })
    }
    const reason = cause instanceof BadValue || cause instanceof Error ? cause.message : String(cause)
    return sourceError(this.context, `column "${plan.name}" (${plan.sourceType}) at ${where}: ${reason}`, { quoted: `${where}: ${reason}` })
  }

  private flush(): void {
    if (this.rows === 0) return
    this.ready.push(batchFromColumns(this.schema, this.decoders.map((decoder) => decoder.finish())))
    this.rows = 0
    this.signal()
  }

  private fail(error: SourceError): void {
    if (this.failure !== undefined) return
    this.failure = error
    this.signal()
  }

  private signal(): void {
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  /** The next batch, or undefined after the last; rejects with the read's failure. */
  async take(): Promise<Batch | undefined> {
    for (;;) {
      const batch = this.ready.shift()
      if (batch !== undefined) {
        if (this.ready.length === 0 && !this.ended) this.session.connection.resume()
        return batch
      }
      if (this.failure !== undefined) throw this.failure
      if (this.ended) return undefined
      await new Promise<void>((resolve) => (this.wake = resolve))
    }
  }
}

/**
 * Opens one export's result in the caller's scope: its own connection in a consistent read-only snapshot, the
 * described and catalog-mapped schema, then one streamed statement whose text-protocol values are decoded straight
 * into column builders, `batchSize` rows (or ~8 MiB) per batch. Closing the scope early kills the statement on the
 * server and closes the connection.
 */
export const openResult = (
  openSessionFor: (snapshot: boolean) => Effect.Effect<Session, SourceError, Scope.Scope>,
  query: SourceQuery,
  zeroDatesAsNull: boolean,
  context: ErrorContext
): Effect.Effect<SourceResult, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const session = yield* openSessionFor(true)
    const { plans, table } = yield* planQuery(session, query, context)
    const statement = statementFor(query, plans)
    const schema = schemaOf(plans)
    const keyColumns = table.primaryKey.map((name) => plans.findIndex((plan) => plan.name === name)).filter((c) => c >= 0)
    const pump = new RowPump(session, plans, schema, Math.max(1, query.batchSize), keyColumns, zeroDatesAsNull, context)
    pump.start(widenFloats(statement, plans))
    const next = Effect.tryPromise({
      try: () => pump.take(),
      catch: (cause) => (cause instanceof SourceError ? cause : fromMysql(cause, context, READING))
    })
    const batches = Stream.repeatEffectOption(
      next.pipe(
        Effect.mapError(Option.some),
        Effect.flatMap((batch) => (batch === undefined ? Effect.fail(Option.none()) : Effect.succeed(batch)))
      )
    )
    return { schema, batches }
  })
