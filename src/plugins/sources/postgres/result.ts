import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type postgres from "postgres"
import { type Batch, batchFromColumns, type BatchSchema } from "../../../core/batch.js"
import type { SourceError } from "../../../core/errors.js"
import type { SourceQuery, SourceResult } from "../../../core/plugin.js"
import { attributeKey, type CatalogInfo, type DescribedColumn, loadCatalog } from "./catalog.js"
import { BinaryCopyDecoder, TruncatedCopy } from "./binary-copy.js"
import { columnFailure, type FieldReader, fieldReader, type FieldSink } from "./binary-fields.js"
import { copyFailure, type CopyOut, copyOut } from "./copy-stream.js"
import { DecodeFailure } from "./decode.js"
import { connectionClosed, type ErrorContext, sourceError } from "./errors.js"
import { attemptOn, connectionLost, openSession, type SessionSettings } from "./session.js"
import { copyStatement, renderInline, renderStatement, type Statement } from "./statement.js"
import { queryPieces, readKeyedPieces, readPieces } from "./pieces.js"
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
 * the described and catalog-mapped schema, then one `COPY (…) TO STDOUT (FORMAT binary)` whose tuples are decoded
 * straight into column buffers, cut into batches of `batchSize` rows or `BATCH_BYTES`. Reading stops (backpressure)
 * while a decoded batch waits for the pipeline. Closing the scope cancels a COPY still running, ends the transaction
 * and returns the connection.
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
    const batches = yield* openCopy(connection, query, plans, schema, context)
    return { schema, batches }
  })

const READING = "reading rows"

/** How often a running COPY checks whether its connection is still there. */
const LOST_POLL_MS = 250

/** A failure while the COPY ran (the driver's error, a value that does not fit, a stream cut short). */
const readFailure = (connection: postgres.TransactionSql, context: ErrorContext, cause: unknown): Effect.Effect<SourceError> => {
  if (cause instanceof DecodeFailure) return Effect.succeed(sourceError(context, cause.message, { hint: cause.hint, quoted: cause.message }))
  return Effect.map(Effect.promise(() => connectionLost(connection)), (lost) => {
    if (lost) return connectionClosed(context, READING)
    if (cause instanceof TruncatedCopy) {
      return sourceError(context, "the result ended before its last row was read (the connection failed)")
    }
    return copyFailure(cause, context, READING)
  })
}

/** The query's batches, read by one COPY per piece of the query (pieces.ts), one after the other. */
export const openCopy = (
  connection: postgres.TransactionSql,
  query: SourceQuery,
  plans: ReadonlyArray<ColumnPlan>,
  schema: BatchSchema,
  context: ErrorContext
): Effect.Effect<Stream.Stream<Batch, SourceError>, SourceError, Scope.Scope> => {
  const readers = plans.map(fieldReader)
  // One set of sinks for every piece: each piece's first batch starts with buffers sized from the batch before. Sinks
  // without rows are still fresh (the piece before ended on a full batch, decoder.end()): resetting them again
  // would allocate a batch's buffers for nothing, sized from no rows.
  let sinks: Array<FieldSink> | undefined
  const reusedSinks = (capacity: number): Array<FieldSink> => {
    if (sinks === undefined) sinks = readers.map((reader) => reader.make(capacity))
    else if (sinks.some((sink) => sink.length > 0)) for (const sink of sinks) sink.reset()
    return sinks
  }
  const open = (piece: SourceQuery) => copyBatches(connection, piece, plans, readers, reusedSinks, schema, context)
  const nullKey = (column: string) =>
    sourceError(context, `a row of the page has a NULL in its key column "${column}"`, { hint: "page by NOT NULL columns" })
  return readKeyedPieces(query, schema, open, nullKey) ?? readPieces(queryPieces(query, schema), open)
}

const copyBatches = (
  connection: postgres.TransactionSql,
  query: SourceQuery,
  plans: ReadonlyArray<ColumnPlan>,
  readers: ReadonlyArray<FieldReader>,
  sinks: (capacity: number) => Array<FieldSink>,
  schema: BatchSchema,
  context: ErrorContext
): Effect.Effect<Stream.Stream<Batch, SourceError>, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const text = copyStatement(renderInline(query), readers.map((reader) => reader.rendered))
    const ready: Array<Batch> = []
    // Chunks (and so batches) may arrive before `copyOut` returns.
    const started: { copy?: CopyOut } = {}
    let wake: (() => void) | undefined
    const notify = () => {
      const waiting = wake
      wake = undefined
      waiting?.()
    }
    const decoder = new BinaryCopyDecoder({
      sinks,
      batchRows: Math.max(1, query.batchSize),
      onBatch: (columns) => {
        ready.push(batchFromColumns(schema, columns))
        // Backpressure: nothing more is read while a decoded batch waits for the pipeline.
        started.copy?.pause()
        notify()
      },
      failure: (column, cause) => columnFailure(plans[column]!, cause)
    })
    const running = yield* copyOut(connection, text, (bytes, start, end) => decoder.push(bytes, start, end), context, READING)
    started.copy = running
    if (ready.length > 0) running.pause()
    let outcome: { readonly ok: true } | { readonly ok: false; readonly cause: unknown } | undefined
    running.done.then(
      () => {
        outcome = { ok: true }
        notify()
      },
      (cause: unknown) => {
        outcome = { ok: false, cause }
        notify()
      }
    )
    // postgres.js may leave a query unsettled when its connection closes at the wrong moment (session.ts): a COPY
    // waiting for its first answer must still end once the connection is gone.
    const watch = setInterval(() => {
      if (outcome !== undefined) return clearInterval(watch)
      void connectionLost(connection).then((lost) => {
        if (!lost || outcome !== undefined) return
        outcome = { ok: false, cause: new TruncatedCopy() }
        notify()
      })
    }, LOST_POLL_MS)
    let ended = false
    let closed = false
    yield* Effect.addFinalizer(() =>
      Effect.sync(() => {
        clearInterval(watch)
        closed = true
      })
    )

    const waitForProgress: Effect.Effect<void> = Effect.async<void>((resume) => {
      wake = () => resume(Effect.void)
      return Effect.sync(() => {
        wake = undefined
      })
    })

    const pull: Effect.Effect<Batch, Option.Option<SourceError>> = Effect.suspend(() => {
      if (closed) return Effect.fail(Option.some(sourceError(context, "the result was read after it was closed")))
      const batch = ready.shift()
      if (batch !== undefined) {
        if (ready.length === 0 && outcome === undefined) running.resume()
        return Effect.succeed(batch)
      }
      if (ended) return Effect.fail(Option.none())
      if (outcome === undefined) {
        running.resume()
        return Effect.zipRight(waitForProgress, pull)
      }
      if (!outcome.ok) return Effect.flatMap(readFailure(connection, context, outcome.cause), (error) => Effect.fail(Option.some(error)))
      ended = true
      return Effect.try({ try: () => decoder.end(), catch: (cause) => cause }).pipe(
        Effect.catchAll((cause) => Effect.flatMap(readFailure(connection, context, cause), Effect.fail)),
        Effect.mapError(Option.some),
        Effect.flatMap((columns) =>
          (columns[0]?.length ?? 0) > 0 ? Effect.succeed(batchFromColumns(schema, columns)) : Effect.fail(Option.none())
        )
      )
    })

    return Stream.repeatEffectOption(pull)
  })
