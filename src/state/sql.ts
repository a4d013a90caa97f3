import type * as Effect from "effect/Effect"
import type { StateError } from "../core/errors.js"

/**
 * The little each state backend provides: run portable SQL (with `?` placeholders) and group statements in a
 * transaction. Everything else — the tables, the queries, the semantics of the store — is shared
 * (`sql-store.ts`, `migrations.ts`), so SQLite and PostgreSQL cannot drift apart.
 */

/** A bound parameter. Booleans are stored as 0/1 and absent values as NULL by the caller. */
export type SqlValue = string | number | null

/** A result row: lower-case column names to driver values (PostgreSQL returns BIGINT as text). */
export type SqlRow = Readonly<Record<string, unknown>>

export interface SqlExecutor {
  readonly all: (sql: string, params?: ReadonlyArray<SqlValue>) => Effect.Effect<ReadonlyArray<SqlRow>, StateError>
  /** Runs a statement and returns how many rows it changed. */
  readonly run: (sql: string, params?: ReadonlyArray<SqlValue>) => Effect.Effect<number, StateError>
}

export interface SqlBackend extends SqlExecutor {
  /** A file path or a URL with the password masked, for messages. */
  readonly location: string
  /** Runs `body` in one transaction: committed when it succeeds, rolled back when it fails. */
  readonly transaction: <A>(body: (tx: SqlExecutor) => Effect.Effect<A, StateError>) => Effect.Effect<A, StateError>
  /** A statement run first in the migration transaction, so two processes starting together migrate one by one. */
  readonly migrationLock?: string | undefined
}

/** A column as text; NULL as `undefined`. */
export const optText = (value: unknown): string | undefined =>
  value === null || value === undefined ? undefined : String(value)

export const text = (value: unknown): string => optText(value) ?? ""

/** A numeric column (PostgreSQL returns BIGINT and COUNT as text). */
export const int = (value: unknown): number => {
  if (typeof value === "number") return value
  if (typeof value === "bigint" || typeof value === "string") return Number(value)
  return 0
}
