import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import postgres from "postgres"
import { describeCause, TableCommitError } from "../../../core/errors.js"
import { installCommand, isPackageMissing } from "../../../core/optional-packages.js"

/** The one SQL a catalog runs: a statement with `?` placeholders and how many rows it changed or returned. */
export interface SqlConnection {
  readonly dialect: "postgres" | "sqlite"
  readonly query: (text: string, params: ReadonlyArray<string | null>) => Promise<{ readonly rows: ReadonlyArray<Record<string, unknown>>; readonly changed: number }>
  readonly close: () => Promise<void>
}

/** `sqlite:/path/catalog.db`, `sqlite:///path/catalog.db` (SQLAlchemy's spelling) → the file's path. */
const sqlitePath = (url: string): string => url.slice("sqlite:".length).replace(/^\/\/(?=\/)/, "")

const numbered = (text: string): string => {
  let n = 0
  return text.replace(/\?/g, () => `$${++n}`)
}

const openPostgres = (url: string): SqlConnection => {
  const sql = postgres(url, { max: 1, onnotice: () => {}, connect_timeout: 10 })
  return {
    dialect: "postgres",
    query: async (text, params) => {
      const result = await sql.unsafe(numbered(text), [...params])
      return { rows: result as unknown as ReadonlyArray<Record<string, unknown>>, changed: result.count }
    },
    close: () => sql.end({ timeout: 5 })
  }
}

const openSqlite = async (path: string): Promise<SqlConnection> => {
  const Database = (await import("better-sqlite3")).default
  const db = new Database(path)
  // Writers of one table from several processes wait for each other's short transactions rather than failing.
  db.pragma("busy_timeout = 5000")
  return {
    dialect: "sqlite",
    query: async (text, params) => {
      const statement = db.prepare(text)
      if (statement.reader) return { rows: statement.all(...params) as ReadonlyArray<Record<string, unknown>>, changed: 0 }
      return { rows: [], changed: statement.run(...params).changes }
    },
    close: async () => {
      db.close()
    }
  }
}

/** A connection to the catalog database at `url` (PostgreSQL or SQLite), closed with the scope. */
export const connectCatalog = (url: string, table: string): Effect.Effect<SqlConnection, TableCommitError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => (url.startsWith("sqlite:") ? openSqlite(sqlitePath(url)) : Promise.resolve(openPostgres(url))),
      catch: (cause) =>
        new TableCommitError({
          table,
          message: isPackageMissing(cause, "better-sqlite3")
            ? "a SQLite catalog needs the optional package better-sqlite3, which is not installed"
            : `could not open the SQL catalog database: ${describeCause(cause)}`,
          hint: isPackageMissing(cause, "better-sqlite3") ? `install it with \`${installCommand("better-sqlite3")}\`` : "check the catalog URL (postgres://… or sqlite:/path/catalog.db)",
          retryable: false,
          cause
        })
    }),
    (connection) => Effect.promise(() => connection.close().catch(() => undefined))
  )
