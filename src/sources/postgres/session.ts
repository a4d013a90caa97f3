import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type postgres from "postgres"
import type { SourceError } from "../../runtime/errors.js"
import { type ErrorContext, fromPostgres } from "./errors.js"
import { quoteIdent } from "./statement.js"

/** Per-transaction settings of an export's snapshot. */
export interface SessionSettings {
  readonly statementTimeoutMs: number
  readonly lockTimeoutMs: number
  readonly schema: string
}

// The SET LOCALs repeat the connection's startup parameters on purpose: the decoders (and the text of bounds fed
// back as parameters) rely on these exact formats, and a `?options=` in the URL or ALTER ROLE … SET must not change
// them. One simple-protocol round trip.
const settingsSql = (settings: SessionSettings): string =>
  [
    `SET LOCAL statement_timeout = ${settings.statementTimeoutMs}`,
    `SET LOCAL lock_timeout = ${settings.lockTimeoutMs}`,
    "SET LOCAL TimeZone = 'UTC'",
    "SET LOCAL DateStyle = 'ISO'",
    "SET LOCAL IntervalStyle = 'iso_8601'",
    "SET LOCAL extra_float_digits = 3",
    "SET LOCAL bytea_output = 'hex'",
    `SET LOCAL search_path = ${settings.schema === "public" ? "public" : `${quoteIdent(settings.schema)}, public`}`
  ].join("; ")

interface Transaction {
  readonly sql: postgres.TransactionSql
  /** Ends the transaction (COMMIT, or ROLLBACK after an error: it is read-only either way) and frees its connection. */
  readonly end: () => Promise<void>
}

// `sql.begin` rather than `sql.reserve()`: postgres.js 3.4.9 never resolves `reserve()` on a cold pool when
// `fetch_types` is false (porsager/postgres#751, #1219). The callback's promise keeps the transaction open until
// `end` is called, which lets the transaction live as long as the caller's scope. postgres.js cannot withdraw a
// queued `begin`, so an abort (the caller interrupted while every connection is busy) ends the transaction as soon
// as it starts, or at once if it already started but its caller is gone.
const beginTransaction = (pool: postgres.Sql, signal: AbortSignal): Promise<Transaction> =>
  new Promise((resolve, reject) => {
    let finish: () => void = () => {}
    const finished = new Promise<void>((done) => {
      finish = done
    })
    const outcome = pool.begin("isolation level repeatable read read only", (sql) => {
      const end = async () => {
        finish()
        await outcome.then(
          () => undefined,
          () => undefined
        )
      }
      if (signal.aborted) void end()
      else signal.addEventListener("abort", () => void end(), { once: true })
      resolve({ sql, end })
      return finished
    })
    outcome.then(() => reject(new Error("the transaction ended before it was used")), reject)
  })

/** Runs a postgres.js call, mapping its rejection; `doing` completes "PostgreSQL failed while …". */
export const attempt = <A>(
  context: ErrorContext,
  doing: string,
  run: () => Promise<A>
): Effect.Effect<A, SourceError> =>
  Effect.tryPromise({ try: run, catch: (cause) => fromPostgres(cause, context, doing) })

/**
 * A read-only repeatable-read transaction on its own connection, configured with the export's settings, held until
 * the caller's scope closes.
 */
export const openSession = (
  pool: postgres.Sql,
  settings: SessionSettings,
  context: ErrorContext
): Effect.Effect<postgres.TransactionSql, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    // Waiting for a free connection stays interruptible (a timeout or Ctrl-C must not hang on a full pool).
    const transaction = yield* Effect.acquireRelease(
      Effect.interruptible(
        Effect.tryPromise({
          try: (signal) => beginTransaction(pool, signal),
          catch: (cause) => fromPostgres(cause, context, "starting the read-only transaction")
        })
      ),
      (started) => Effect.promise(started.end)
    )
    yield* attempt(context, "configuring the session", () => transaction.sql.unsafe(settingsSql(settings)).simple())
    return transaction.sql
  })
