import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { SourceError } from "../../../core/errors.js"
import type { ColumnBounds, SourceDescription, SourceQuery } from "../../../core/plugin.js"
import { tableOf } from "../../../core/plugin.js"
import type { ErrorContext } from "./errors.js"
import { planQuery, schemaOf, statementFor } from "./result.js"
import { runOn, type Session } from "./session.js"
import { boundsStatement, quoteIdent, renderStatement } from "./statement.js"

type SessionFor = (snapshot: boolean) => Effect.Effect<Session, SourceError, Scope.Scope>

/** The query's output schema and the table's primary key, exactly as `open` would read them, without reading rows. */
export const describeQuery = (
  openSession: SessionFor,
  query: SourceQuery,
  context: ErrorContext
): Effect.Effect<SourceDescription, SourceError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const session = yield* openSession(false)
      const { plans, table } = yield* planQuery(session, query, context)
      return { schema: schemaOf(plans), primaryKey: table.primaryKey }
    })
  )

/**
 * min/max of `column` over the query's rows (as MySQL's text: timestamps in the session's UTC) and whether a NULL
 * is among them.
 */
export const queryBounds = (
  openSession: SessionFor,
  query: SourceQuery,
  column: string,
  context: ErrorContext
): Effect.Effect<ColumnBounds, SourceError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const session = yield* openSession(true)
      const filtered = (query.where ?? []).length > 0
      const inner = filtered ? statementFor(query, (yield* planQuery(session, query, context)).plans) : renderStatement(query)
      const statement = boundsStatement(inner, column)
      const [row] = yield* runOn(session, context, `reading the bounds of ${quoteIdent(column)}`, statement.text, statement.params)
      return { min: row?.[0] ?? null, max: row?.[1] ?? null, hasNulls: row?.[2] === "1" }
    })
  )

const isWholeTable = (query: SourceQuery): boolean =>
  tableOf(query) !== undefined &&
  (query.where ?? []).length === 0 &&
  (query.orderBy ?? []).length === 0 &&
  query.limit === undefined

/**
 * The server's row estimate, never running the query: `information_schema.TABLES.TABLE_ROWS` for a whole table
 * (InnoDB's sampled count), else the largest `rows` of `EXPLAIN` for the statement `open` would run.
 */
export const estimateQueryRows = (
  openSession: SessionFor,
  query: SourceQuery,
  context: ErrorContext
): Effect.Effect<number | undefined, SourceError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const session = yield* openSession(false)
      if (isWholeTable(query)) {
        const table = tableOf(query)!
        const [row] = yield* runOn(
          session,
          context,
          "reading the table's row estimate",
          "SELECT TABLE_ROWS FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?",
          [table.schema ?? null, table.name]
        )
        const value = row?.[0]
        return value === undefined || value === null ? undefined : Number(value)
      }
      const statement = (query.where ?? []).length > 0 ? statementFor(query, (yield* planQuery(session, query, context)).plans) : renderStatement(query)
      const rows = yield* runOn(session, context, "estimating the query's rows (EXPLAIN)", `EXPLAIN ${statement.text}`, statement.params)
      // EXPLAIN's columns: id, select_type, table, type, possible_keys, key, key_len, ref, rows, …
      const estimates = rows.map((row) => Number(row[8])).filter((rows) => Number.isFinite(rows))
      return estimates.length === 0 ? undefined : Math.max(...estimates)
    })
  )
