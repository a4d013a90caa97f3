import type * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Runtime from "effect/Runtime"
import postgres from "postgres"
import { describeCause, StateError } from "../core/errors.js"
import { displayAddress, isUrlProblem, makeScrubber, parsePostgresUrl, resolveConnection } from "../core/source/postgres-url.js"
import { isTlsProblem, tlsFailure } from "../core/source/postgres-tls.js"
import { migrate } from "./migrations.js"
import type { RetryPolicy } from "../core/retry.js"
import { retryingBackend, STATE_RETRY_POLICY } from "./retrying.js"
import type { SqlExecutor, SqlRow } from "./sql.js"
import { makePgClaims } from "./pg-claims.js"
import { makeSqlStore } from "./sql-store.js"
import { StateStore } from "./store.js"

const CONNECT_TIMEOUT_S = 10
const END_TIMEOUT_S = 5
/** See the `connection` settings below. */
const IDLE_IN_TRANSACTION_MS = 30_000
// Any constant works: it only has to be the same for every Rivet that migrates this database.
const MIGRATION_LOCK = "SELECT pg_advisory_xact_lock(5253454154)"

const HINT =
  "check RIVET_STATE_URL: the server must answer, the database must exist and the user must be allowed to create " +
  "tables in its default schema (add ?search_path=<schema> to the URL to use another schema)"

/** Network failures and lost sessions: the same statement may well succeed on a new connection. */
const TRANSIENT_CODES = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "EPIPE",
  "ECONNABORTED",
  "EHOSTUNREACH",
  "ENETUNREACH",
  "EAI_AGAIN",
  "CONNECT_TIMEOUT",
  "CONNECTION_CLOSED",
  "CONNECTION_DESTROYED",
  "CONNECTION_ENDED"
])

/** SQLSTATE classes worth another try: connection exceptions, resources, serialization/deadlock, server shutdown. */
const isTransient = (cause: unknown): boolean => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
  if (TRANSIENT_CODES.has(code)) return true
  if (!(cause instanceof postgres.PostgresError)) return false
  // 25P03: the server ended a session idle in a transaction too long (IDLE_IN_TRANSACTION_MS).
  return ["08", "40", "53", "57"].includes(code.slice(0, 2)) || code === "55P03" || code === "25P03"
}

/** `?` placeholders (the portable spelling the shared queries use) → PostgreSQL's `$1, $2, …`. */
const numbered = (sql: string): string => {
  let n = 0
  return sql.replace(/\?/g, () => `$${++n}`)
}

/** A failure inside a transaction body, carried through postgres.js so `begin` rolls back, then re-raised. */
class Rollback {
  constructor(readonly cause: Cause.Cause<StateError>) {}
}

/**
 * The state store in PostgreSQL (`RIVET_STATE_URL`): the same tables as the SQLite file, created on first connect
 * in the URL's default schema. Messages show the URL with its password masked, never the password. Transient
 * failures are retried with `retry` (default: the state's own policy, which outwaits about half a minute).
 */
export const postgresStateLayer = (url: string, retry: RetryPolicy = STATE_RETRY_POLICY): Layer.Layer<StateStore, StateError> =>
  Layer.scoped(
    StateStore,
    Effect.gen(function* () {
      const address = parsePostgresUrl(url)
      if (isUrlProblem(address)) {
        return yield* new StateError({ message: `the state URL (RIVET_STATE_URL): ${address.message}`, hint: address.hint })
      }
      const location = displayAddress(address)
      const target = resolveConnection(address)
      if (isTlsProblem(target)) {
        return yield* new StateError({ message: `the state URL (RIVET_STATE_URL): ${target.message}`, hint: target.hint })
      }
      const scrub = makeScrubber(url)
      const toStateError = (cause: unknown) => {
        const tls = tlsFailure(cause, target.tls, location)
        return tls !== undefined
          ? new StateError({ message: scrub(`state database (RIVET_STATE_URL): ${tls.message}`), hint: tls.hint, retryable: false })
          : new StateError({
              message: scrub(`state database ${location}: ${describeCause(cause)}`),
              hint: HINT,
              retryable: isTransient(cause)
            })
      }

      const sql = yield* Effect.acquireRelease(
        Effect.try({
          try: () =>
            postgres(target.settingsUrl, {
              ...target.options,
              max: 2,
              connect_timeout: CONNECT_TIMEOUT_S,
              fetch_types: false,
              onnotice: () => {},
              // A run cut off from the state database in the middle of a transaction (alive, its bytes held up by
              // the network) would hold its row locks, and the run taking its expired lease over would wait on
              // them for good: the server ends such a session instead. The store's transactions are a few
              // statements long; one idle for this long belongs to a process that is stalled or cut off.
              connection: { application_name: "rivet-state", idle_in_transaction_session_timeout: IDLE_IN_TRANSACTION_MS }
            }),
          catch: toStateError
        }),
        (sql) => Effect.promise(() => sql.end({ timeout: END_TIMEOUT_S }).catch(() => undefined))
      )

      const executorOf = (client: postgres.Sql | postgres.TransactionSql): SqlExecutor => ({
        all: (text, params) =>
          Effect.tryPromise({
            try: async (): Promise<ReadonlyArray<SqlRow>> => [...(await client.unsafe(numbered(text), [...(params ?? [])]))],
            catch: toStateError
          }),
        run: (text, params) =>
          Effect.tryPromise({
            try: async () => (await client.unsafe(numbered(text), [...(params ?? [])])).count,
            catch: toStateError
          })
      })

      const transaction = <A>(body: (tx: SqlExecutor) => Effect.Effect<A, StateError>) =>
        Effect.flatMap(Effect.runtime<never>(), (runtime) =>
          Effect.tryPromise({
            // The body runs as its own fiber inside postgres.js's callback; a failure rejects it, which rolls back.
            try: () =>
              sql.begin(async (tx) => {
                const exit = await Runtime.runPromiseExit(runtime)(body(executorOf(tx)))
                if (Exit.isFailure(exit)) throw new Rollback(exit.cause)
                return { value: exit.value }
              }),
            catch: (cause) => (cause instanceof Rollback ? cause : toStateError(cause))
          }).pipe(
            Effect.map((box) => box.value),
            Effect.catchAll((error) => (error instanceof Rollback ? Effect.failCause(error.cause) : Effect.fail(error)))
          )
        )

      const backend = retryingBackend({ location, ...executorOf(sql), transaction, migrationLock: MIGRATION_LOCK }, retry)
      yield* migrate(backend)
      return { ...makeSqlStore(backend), claims: makePgClaims(backend) }
    })
  )
