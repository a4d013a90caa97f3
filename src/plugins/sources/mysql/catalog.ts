import * as Effect from "effect/Effect"
import type { SourceError } from "../../../core/errors.js"
import type { SourceQuery } from "../../../core/plugin.js"
import { tableOf } from "../../../core/plugin.js"
import type { ErrorContext } from "./errors.js"
import { fromMysql } from "./errors.js"
import { runOn, type Session } from "./session.js"
import type { Statement } from "./statement.js"
import type { FieldInfo } from "./types.js"

/** What the catalog says about an export's table: its primary key and (MariaDB) its JSON columns. */
export interface TableInfo {
  readonly primaryKey: ReadonlyArray<string>
  /** MariaDB's `json` is `longtext` with a `CHECK (json_valid(col))` constraint: the columns that have one. */
  readonly jsonColumns: ReadonlySet<string>
}

const EMPTY: TableInfo = { primaryKey: [], jsonColumns: new Set() }

const PRIMARY_KEY_SQL =
  "SELECT COLUMN_NAME FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY' ORDER BY SEQ_IN_INDEX"

const JSON_CHECKS_SQL =
  "SELECT CHECK_CLAUSE FROM information_schema.CHECK_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = COALESCE(?, DATABASE()) AND TABLE_NAME = ?"

const JSON_VALID = /^json_valid\(`((?:[^`]|``)+)`\)$/i

/** The primary key and JSON columns of `tableOf(query)`; nothing for a query export. */
export const tableInfo = (session: Session, query: SourceQuery, context: ErrorContext): Effect.Effect<TableInfo, SourceError> => {
  const table = tableOf(query)
  if (table === undefined) return Effect.succeed(EMPTY)
  const params = [table.schema ?? null, table.name]
  return Effect.gen(function* () {
    const keyRows = yield* runOn(session, context, "reading the table's primary key", PRIMARY_KEY_SQL, params)
    // MySQL 8 has a real JSON type and its CHECK_CONSTRAINTS has no TABLE_NAME: only MariaDB is asked.
    const checkRows = session.mariadb
      ? yield* runOn(session, context, "reading the table's JSON columns", JSON_CHECKS_SQL, params)
      : []
    const jsonColumns = new Set<string>()
    for (const [clause] of checkRows) {
      const match = JSON_VALID.exec(clause ?? "")
      if (match) jsonColumns.add(match[1]!.replace(/``/g, "`"))
    }
    return { primaryKey: keyRows.map(([name]) => name ?? ""), jsonColumns }
  })
}

/** The output columns of a statement, from a `LIMIT 0` run of it (no row is read). */
export const describeFields = (
  session: Session,
  statement: Statement,
  context: ErrorContext
): Effect.Effect<ReadonlyArray<FieldInfo>, SourceError> =>
  Effect.tryPromise({
    try: () =>
      new Promise<ReadonlyArray<FieldInfo>>((resolve, reject) => {
        session.connection.query(
          { sql: statement.text, values: [...statement.params], rowsAsArray: true },
          (error, _rows, fields) => {
            if (error) return reject(error)
            resolve(
              (fields ?? []).map((field) => ({
                name: field.name,
                columnType: field.columnType ?? 253,
                flags: typeof field.flags === "number" ? field.flags : 0,
                characterSet: field.characterSet ?? 63,
                columnLength: field.columnLength ?? 0,
                decimals: field.decimals
              }))
            )
          }
        )
      }),
    catch: (cause) => fromMysql(cause, context, "describing the query")
  })
