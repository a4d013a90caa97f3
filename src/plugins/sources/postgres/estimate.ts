import * as Effect from "effect/Effect"
import type postgres from "postgres"
import type { SourceError } from "../../../core/errors.js"
import type { SourceQuery } from "../../../core/plugin.js"
import { tableOf } from "../../../core/plugin.js"
import type { ErrorContext } from "./errors.js"
import { attemptOn, openSession, type SessionSettings } from "./session.js"
import { quoteIdent, renderStatement } from "./statement.js"

// Resolved with the session's search_path, exactly as the export's `SELECT * FROM …` resolves the table.
const RELTUPLES_SQL = "select reltuples::text from pg_catalog.pg_class where oid = pg_catalog.to_regclass($1)"

const isWholeTable = (query: SourceQuery): boolean =>
  tableOf(query) !== undefined &&
  (query.where ?? []).length === 0 &&
  (query.orderBy ?? []).length === 0 &&
  query.limit === undefined

/** The top-level `Plan Rows` of an `EXPLAIN (FORMAT JSON)` result (text or already parsed). */
const planRows = (value: unknown): number | undefined => {
  const parsed: unknown = typeof value === "string" ? JSON.parse(value) : value
  const top = Array.isArray(parsed) ? (parsed[0] as { Plan?: { "Plan Rows"?: unknown } } | undefined) : undefined
  const rows = top?.Plan?.["Plan Rows"]
  return typeof rows === "number" && Number.isFinite(rows) ? Math.round(rows) : undefined
}

/**
 * The planner's row estimate for a query, never running it: `pg_class.reltuples` for a whole table (`undefined`
 * when the table was never analyzed or vacuumed: reltuples is then -1), else the top-level `Plan Rows` of
 * `EXPLAIN (FORMAT JSON)` — the same statement `open` would run, with the same parameters.
 */
export const estimateQueryRows = (
  pool: postgres.Sql,
  query: SourceQuery,
  settings: SessionSettings,
  context: ErrorContext
): Effect.Effect<number | undefined, SourceError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const connection = yield* openSession(pool, settings, context)
      if (isWholeTable(query)) {
        const table = tableOf(query)!
        const name = [...(table.schema === undefined ? [] : [table.schema]), table.name].map(quoteIdent).join(".")
        const rows = yield* attemptOn(connection, context, "reading the table's row estimate", () =>
          connection.unsafe(RELTUPLES_SQL, [name]).values()
        )
        const value = rows[0]?.[0]
        const estimate = value === undefined || value === null ? -1 : Number(value)
        return Number.isFinite(estimate) && estimate >= 0 ? Math.round(estimate) : undefined
      }
      const statement = renderStatement(query)
      const rows = yield* attemptOn(connection, context, "estimating the query's rows (EXPLAIN)", () =>
        connection.unsafe(`EXPLAIN (FORMAT JSON) ${statement.text}`, [...statement.params]).values()
      )
      return planRows(rows[0]?.[0])
    })
  )
