import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import type * as Scope from "effect/Scope"
import type postgres from "postgres"
import type { SourceError } from "../../../core/errors.js"
import { type CancellableQuery, sendCancel } from "./cancel-request.js"
import { type ErrorContext, fromPostgres } from "./errors.js"
import { quoteIdent } from "./statement.js"

/** Per-transaction settings of an export's snapshot. */
export interface SessionSettings {
  readonly statementTimeoutMs: number
  readonly lockTimeoutMs: number
  readonly schema: string
  /** Read on a snapshot another session exported (`SET TRANSACTION SNAPSHOT`): a change log's starting point. */
  readonly snapshot?: string | undefined
}

// The SET LOCALs repeat the connection's startup parameters on purpose: the decoders (and the text of bounds fed
// back as parameters) rely on these exact formats, and a `?options=` in the URL or ALTER ROLE … SET must not change
// them. One simple-protocol round trip.
const settingsSql = (settings: SessionSettings): string =>
  [
    // First: a snapshot can only be imported before the transaction's first query.
    ...(settings.snapshot === undefined ? [] : [`SET TRANSACTION SNAPSHOT '${settings.snapshot.replaceAll("'", "''")}'`]),
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

/**
 * What a postgres.js query exposes beyond its types: `executed` is set once it was handed to its connection (then
 * postgres.js has attached its own rejection handler, so a cancelled query never rejects unhandled).
 */
interface TrackedQuery extends CancellableQuery {
  readonly executed?: boolean
}

/** How long ending a transaction waits for its cancelled statement to stop. */
const CANCEL_WAIT_MS = 5_000

/** The queries each transaction from `openSession` has sent, to cancel the running one when its scope closes. */
const sentQueries = new WeakMap<postgres.TransactionSql, Set<TrackedQuery>>()

/**
 * Cancels whatever statement a transaction from `openSession` is running — a describe, a lock wait, a cursor fetch,
 * a COPY — with a PostgreSQL cancel request (postgres.js `query.cancel()`; a query still queued behind it is
 * dropped). Without it, interrupting the fiber that awaits a statement only stops the waiting: the statement runs
 * on, and the transaction's end (queued behind it on the same connection) waits as long, e.g. a lock wait with
 * `lock_timeout_s: 0` until the lock is released. Cancelling a finished query does nothing.
 */
export const cancelRunning = async (sql: postgres.TransactionSql): Promise<void> => {
  const queries = [...(sentQueries.get(sql) ?? [])].filter((query) => query.executed === true)
  sentQueries.get(sql)?.clear()
  await Promise.all(queries.map(sendCancel))
}

/** Whether a transaction's connection has closed (see `connectionLost`). */
const closedChecks = new WeakMap<postgres.TransactionSql, () => boolean>()

/** What postgres.js itself reports for a query on a closed connection (errors.ts maps it). */
const closedConnection = () =>
  Object.assign(new Error("the transaction's connection closed (CONNECTION_CLOSED)"), { code: "CONNECTION_CLOSED" })

/**
 * A socket that fails (ECONNRESET) reports its error first and closes later in the same turn of the event loop, in
 * its close callback: a timer fires only after that.
 */
const afterCloseCallbacks = () => new Promise<void>((resolve) => setTimeout(resolve, 0))

/**
 * Whether the connection of a transaction from `openSession` has closed under it: the server ended the session
 * (a restart, `pg_terminate_backend`) or the network dropped it. Asked after an error, or when a cursor ended early:
 * postgres.js ends the iteration of a query whose connection closed between two fetches as if every row had been
 * read. Nothing may be sent on such a transaction any more (see `beginTransaction`).
 */
export const connectionLost = async (sql: postgres.TransactionSql): Promise<boolean> => {
  const closed = closedChecks.get(sql)
  if (closed === undefined || closed()) return closed !== undefined
  await afterCloseCallbacks()
  return closed()
}

// `sql.begin` rather than `sql.reserve()`: postgres.js 3.4.9 never resolves `reserve()` on a cold pool when
// `fetch_types` is false (porsager/postgres#751, #1219). The callback's promise keeps the transaction open until
// `end` is called, which lets the transaction live as long as the caller's scope. postgres.js cannot withdraw a
// queued `begin`, so an abort (the caller interrupted while every connection is busy) ends the transaction as soon
// as it starts, or at once if it already started but its caller is gone.
// postgres.js settles `begin` early, with a rejection, only when the transaction's connection closes. Such a
// transaction must not be ended: postgres.js would write COMMIT or ROLLBACK to the socket it already dropped — from
// a timer, which crashes the process (porsager/postgres#1208) — or, between the socket's error and its close, queue
// it on the connection object, which the pool reconnects and lends to another transaction that then hangs. Nor may
// any other query: postgres.js writes it into the void (no error, no answer — or the same crash), so the transaction
// handed out refuses new queries once its connection is gone.
const beginTransaction = (pool: postgres.Sql, signal: AbortSignal): Promise<Transaction> =>
  new Promise((resolve, reject) => {
    let finish: () => void = () => {}
    let settled = false
    const finished = new Promise<void>((done) => {
      finish = done
    })
    const outcome = pool.begin("isolation level repeatable read read only", (sql) => {
      const end = async () => {
        if (!(await connectionLost(guarded))) finish()
        await outcome.then(
          () => undefined,
          () => undefined
        )
      }
      const sent = new Set<TrackedQuery>()
      const unsafe = (...args: Parameters<postgres.TransactionSql["unsafe"]>) => {
        if (settled) throw closedConnection()
        const query = sql.unsafe(...args)
        sent.add(query as unknown as TrackedQuery)
        return query
      }
      const guarded = new Proxy(sql, {
        get: (target, key, receiver) => (key === "unsafe" ? unsafe : Reflect.get(target, key, receiver))
      })
      closedChecks.set(guarded, () => settled)
      sentQueries.set(guarded, sent)
      if (signal.aborted) void end()
      else signal.addEventListener("abort", () => void end(), { once: true })
      resolve({ sql: guarded, end })
      return finished
    })
    outcome.then(
      () => {
        settled = true
      },
      () => {
        settled = true
      }
    )
    outcome.then(() => reject(new Error("the transaction ended before it was used")), reject)
  })

/** Runs a postgres.js call, mapping its rejection; `doing` completes "PostgreSQL failed while …". */
export const attempt = <A>(
  context: ErrorContext,
  doing: string,
  run: () => Promise<A>
): Effect.Effect<A, SourceError> =>
  Effect.tryPromise({ try: run, catch: (cause) => fromPostgres(cause, context, doing) })

/** How often a query on a transaction checks whether its connection is still there. */
const LOST_POLL_MS = 250

/**
 * `attempt` for a query on a transaction from `openSession`, which also fails (CONNECTION_CLOSED, retryable) once
 * the transaction's connection is gone: postgres.js 3.4.9 may never settle a query whose connection was closed
 * while the statement was being described, and an unattended export must not wait for it forever.
 */
export const attemptOn = <A>(
  sql: postgres.TransactionSql,
  context: ErrorContext,
  doing: string,
  run: () => Promise<A>
): Effect.Effect<A, SourceError> => {
  const closed = closedChecks.get(sql)
  if (closed === undefined) return attempt(context, doing, run)
  return attempt(context, doing, () =>
    new Promise<A>((resolve, reject) => {
      const watch = setInterval(() => {
        if (!closed()) return
        clearInterval(watch)
        reject(closedConnection())
      }, LOST_POLL_MS)
      run().then(
        (value) => {
          clearInterval(watch)
          resolve(value)
        },
        (error: unknown) => {
          clearInterval(watch)
          reject(error)
        }
      )
    })
  )
}

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
      // An interruption (a signal, a timeout) or a failure elsewhere may leave a statement running: cancel it first,
      // or the end would wait behind it. Not on a lost connection: nothing may be sent there (see `beginTransaction`).
      // Only when the scope did not succeed: a cancel request that arrived late could hit the connection's next
      // statement (another export's), and after a success nothing is running.
      (started, exit) =>
        Effect.promise(async () => {
          if (!Exit.isFailure(exit) || (await connectionLost(started.sql))) return started.end()
          // The end is sent once the server has taken the cancel request: a request still on its way could otherwise
          // cancel the statement the connection runs next (another export's). Should it not get through, the end
          // waits behind the statement: bounded, after which closing the pool (the source's scope) closes the
          // connection under it.
          let timer: ReturnType<typeof setTimeout> | undefined
          await Promise.race([
            cancelRunning(started.sql).then(() => started.end()),
            new Promise<void>((resolve) => (timer = setTimeout(resolve, CANCEL_WAIT_MS)))
          ])
          clearTimeout(timer)
        })
    )
    yield* attemptOn(transaction.sql, context, "configuring the session", () => transaction.sql.unsafe(settingsSql(settings)).simple())
    return transaction.sql
  })
