import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type postgres from "postgres"
import { type Batch, type BatchSchema, makeBatch } from "../../runtime/batch.js"
import { describeCause, type SourceError } from "../../runtime/errors.js"
import type { SourceQuery, SourceResult } from "../../runtime/plugin.js"
import { attributeKey, type CatalogInfo, type DescribedColumn, loadCatalog } from "./catalog.js"
import { DecodeFailure } from "./decode.js"
import { connectionClosed, type ErrorContext, fromPostgres, sourceError } from "./errors.js"
import { decodeColumns, type TextRows } from "./rows.js"
import { attemptOn, connectionLost, openSession, type SessionSettings } from "./session.js"
import { renderStatement, type Statement } from "./statement.js"
import { type ColumnPlan, planColumn, type Problem, resolveShape } from "./types.js"

const problemsError = (context: ErrorContext, problems: ReadonlyArray<{ column: string; problem: Problem }>) =>
  sourceError(
    context,
    `${problems.length} column(s) cannot be exported as they are:\n` +
      problems.map(({ column, problem }) => `  • ${column}: ${problem.reason}`).join("\n"),
    { hint: problems.map(({ column, problem }) => `${column}: ${problem.fix}`).join("\n") }
  )

/** Maps described columns to column plans, applying the export's overrides; fails listing every problem. */
const planColumns = (
  context: ErrorContext,
  query: SourceQuery,
  columns: ReadonlyArray<DescribedColumn>,
  catalog: CatalogInfo
): Effect.Effect<ReadonlyArray<ColumnPlan>, SourceError> => {
  if (columns.length === 0) return Effect.fail(sourceError(context, "the query returns no columns"))
  const names = new Set(columns.map((column) => column.name))
  const unknown = [...query.columnTypes.keys()].filter((name) => !names.has(name))
  if (unknown.length > 0) {
    const listed = unknown.map((name) => `"${name}"`).join(", ")
    return Effect.fail(
      sourceError(context, `\`columns:\` overrides name ${listed}, which the query does not return`, {
        hint: `the query returns: ${[...names].join(", ")}`
      })
    )
  }
  const plans: Array<ColumnPlan> = []
  const problems: Array<{ column: string; problem: Problem }> = []
  for (const column of columns) {
    const attribute = column.table !== 0 ? catalog.attributes.get(attributeKey(column.table, column.number)) : undefined
    const shape = resolveShape(catalog.types, attribute?.type ?? column.type, attribute?.typmod ?? -1)
    const planned = planColumn(column.name, shape, query.columnTypes.get(column.name))
    if ("plan" in planned) plans.push(planned.plan)
    else problems.push({ column: column.name, problem: planned.problem })
  }
  return problems.length > 0 ? Effect.fail(problemsError(context, problems)) : Effect.succeed(plans)
}

/** A query's result columns: described by the server, typed through the catalog and the export's overrides. */
export interface PlannedColumns {
  readonly plans: ReadonlyArray<ColumnPlan>
  readonly schema: BatchSchema
}

/** Describes `statement` (without running it) and maps its columns exactly as `openResult` reads them. */
export const planStatement = (
  connection: postgres.TransactionSql,
  query: SourceQuery,
  statement: Statement,
  context: ErrorContext
): Effect.Effect<PlannedColumns, SourceError> =>
  Effect.gen(function* () {
    const described: ReadonlyArray<DescribedColumn> = (yield* attemptOn(connection, context, "preparing the query", () =>
      connection.unsafe(statement.text, [...statement.params]).describe()
    )).columns
    const catalog = yield* attemptOn(connection, context, "reading column types from the catalog", () =>
      loadCatalog(connection, described)
    )
    const plans = yield* planColumns(context, query, described, catalog)
    const schema: BatchSchema = {
      columns: plans.map((plan) => ({ name: plan.name, type: plan.type, sourceType: plan.sourceType }))
    }
    return { plans, schema }
  })

/**
 * Opens one export's result in the caller's scope: a read-only repeatable-read transaction on its own connection,
 * the described and catalog-mapped schema, then a server-side cursor read `batchSize` rows per pull. Closing the
 * scope cancels an in-flight fetch, closes the cursor, ends the transaction and returns the connection.
 */
export const openResult = (
  pool: postgres.Sql,
  query: SourceQuery,
  settings: SessionSettings,
  context: ErrorContext
): Effect.Effect<SourceResult, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const statement = renderStatement(query)
    const connection = yield* openSession(pool, settings, context)
    const { plans, schema } = yield* planStatement(connection, query, statement, context)
    const batches = yield* openCursor(connection, statement, query.batchSize, plans, schema, context)
    return { schema, batches }
  })

const decodeBatch = (
  context: ErrorContext,
  plans: ReadonlyArray<ColumnPlan>,
  schema: BatchSchema,
  rows: TextRows
): Effect.Effect<Batch, SourceError> =>
  Effect.try({
    try: () => makeBatch(schema, decodeColumns(plans, rows)),
    catch: (cause) =>
      cause instanceof DecodeFailure
        ? sourceError(context, cause.message, { hint: cause.hint })
        : sourceError(context, `decoding rows failed: ${describeCause(cause)}`)
  })

const CUT_SHORT = Symbol("CutShort")

export const openCursor = (
  connection: postgres.TransactionSql,
  statement: Statement,
  batchSize: number,
  plans: ReadonlyArray<ColumnPlan>,
  schema: BatchSchema,
  context: ErrorContext
): Effect.Effect<Stream.Stream<Batch, SourceError>, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    // `.values()`: rows as arrays, so duplicate column names survive. `.cursor(n)`: n rows per Execute.
    const pending = yield* Effect.try({
      try: () => connection.unsafe(statement.text, [...statement.params]).values(),
      catch: (cause) => fromPostgres(cause, context, "reading rows")
    })
    const iterator = pending.cursor(Math.max(1, batchSize))[Symbol.asyncIterator]()
    let inFlight: Promise<unknown> | undefined
    let finished = false
    let closed = false

    yield* Effect.addFinalizer(() =>
      Effect.promise(async () => {
        closed = true
        // Closing the cursor of a lost connection would write to a socket postgres.js already dropped (session.ts).
        if (await connectionLost(connection)) return
        if (inFlight !== undefined) {
          // The consumer was interrupted mid-fetch: cancel the running statement and wait for it to settle.
          pending.cancel()
          await inFlight.catch(() => undefined)
        }
        await iterator.return?.()
      })
    )

    // postgres.js answers a plain `{ done: true }`, not a promise, when the query ended while no fetch was waiting
    // for it: its connection closed (or failed) between two fetches, and rows may be missing. A complete result
    // always ends through a waiting fetch (the end is only known after the Sync that follows the last rows).
    const fetch = (): Promise<IteratorResult<ReadonlyArray<unknown>> | typeof CUT_SHORT> => {
      const next: unknown = iterator.next()
      if (!(next instanceof Promise)) return Promise.resolve(CUT_SHORT)
      inFlight = next
      return (next as Promise<IteratorResult<ReadonlyArray<unknown>>>).finally(() => {
        inFlight = undefined
      })
    }

    const pull: Effect.Effect<Batch, Option.Option<SourceError>> = Effect.suspend(() => {
      if (closed) return Effect.fail(Option.some(sourceError(context, "the result was read after it was closed")))
      if (finished) return Effect.fail(Option.none())
      return Effect.tryPromise({ try: fetch, catch: (cause) => fromPostgres(cause, context, "reading rows") }).pipe(
        Effect.mapError(Option.some),
        Effect.flatMap((step) => {
          if (step === CUT_SHORT) {
            return Effect.flatMap(Effect.promise(() => connectionLost(connection)), (lost) =>
              Effect.fail(
                Option.some(
                  lost
                    ? connectionClosed(context, "reading rows")
                    : sourceError(context, "the result ended before its last row was read (the connection failed)")
                )
              )
            )
          }
          if (step.done === true) {
            finished = true
            return Effect.fail(Option.none())
          }
          return Effect.mapError(decodeBatch(context, plans, schema, step.value as TextRows), Option.some)
        })
      )
    })

    return Stream.repeatEffectOption(pull)
  })
