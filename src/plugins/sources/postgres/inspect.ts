import * as Effect from "effect/Effect"
import type postgres from "postgres"
import type { SourceError } from "../../../core/errors.js"
import type { ColumnBounds, SourceDescription, SourceQuery } from "../../../core/plugin.js"
import { tableOf } from "../../../core/plugin.js"
import { type ErrorContext, sourceError } from "./errors.js"
import { planStatement } from "./result.js"
import { attemptOn, openSession, type SessionSettings } from "./session.js"
import { boundsStatement, quoteIdent, renderStatement } from "./statement.js"

// The table is resolved with the session's search_path, exactly as the export's `SELECT * FROM …` resolves it.
const PRIMARY_KEY_SQL = `
select a.attname
from pg_catalog.pg_index i
cross join lateral unnest(i.indkey::int2[]) with ordinality as k(attnum, position)
join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
where i.indrelid = pg_catalog.to_regclass($1) and i.indisprimary
order by k.position`

const primaryKey = (
  connection: postgres.TransactionSql,
  table: ReturnType<typeof tableOf>,
  context: ErrorContext
): Effect.Effect<ReadonlyArray<string>, SourceError> => {
  if (table === undefined) return Effect.succeed([])
  const name = [...(table.schema === undefined ? [] : [table.schema]), table.name].map(quoteIdent).join(".")
  return attemptOn(connection, context, "reading the table's primary key", () =>
    connection.unsafe(PRIMARY_KEY_SQL, [name]).values()
  ).pipe(Effect.map((rows) => rows.map((row) => String(row[0]))))
}

/** The query's output schema, exactly as `openResult` would read it, and the primary key of its table. */
export const describeQuery = (
  pool: postgres.Sql,
  query: SourceQuery,
  settings: SessionSettings,
  context: ErrorContext
): Effect.Effect<SourceDescription, SourceError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const connection = yield* openSession(pool, settings, context)
      const { schema } = yield* planStatement(connection, query, renderStatement(query), context)
      return { schema, primaryKey: yield* primaryKey(connection, tableOf(query), context) }
    })
  )

/**
 * min and max of one column over the query's rows (its filters included) as PostgreSQL text in the session's
 * formats (ISO, UTC), so either can be bound back as a parameter; and whether the column holds a NULL.
 */
export const queryBounds = (
  pool: postgres.Sql,
  query: SourceQuery,
  column: string,
  settings: SessionSettings,
  context: ErrorContext
): Effect.Effect<ColumnBounds, SourceError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const connection = yield* openSession(pool, settings, context)
      const inner = renderStatement(query)
      const described = yield* attemptOn(connection, context, "preparing the query", () =>
        connection.unsafe(inner.text, [...inner.params]).describe()
      )
      const names = described.columns.map((c) => c.name)
      if (!names.includes(column)) {
        return yield* Effect.fail(
          sourceError(context, `column "${column}" is not in the query's result`, {
            hint: `the query returns: ${names.join(", ")}`
          })
        )
      }
      const statement = boundsStatement(inner, column)
      const rows = yield* attemptOn(connection, context, `reading the range of column "${column}"`, () =>
        connection.unsafe(statement.text, [...statement.params]).values()
      )
      const [min, max, hasNulls] = (rows[0] ?? []) as ReadonlyArray<string | null>
      return { min: min ?? null, max: max ?? null, hasNulls: hasNulls === "t" }
    })
  )
