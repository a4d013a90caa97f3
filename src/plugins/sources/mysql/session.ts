import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import mysql from "mysql2"
import type { SourceError } from "../../../core/errors.js"
import { type ErrorContext, fromMysql } from "./errors.js"
import { type MysqlTls, serverNameProblem } from "./tls.js"
import type { MysqlAddress } from "./url.js"

/** An address with the TLS it is dialled with (the settings merged from the `tls:` block and the URL, files read). */
export interface MysqlTarget extends MysqlAddress {
  readonly tls?: MysqlTls | undefined
}

/** Per-session settings of an export's snapshot. */
export interface SessionSettings {
  readonly statementTimeoutS: number
  readonly lockTimeoutS: number
}

/** One connection of the source with what the server said about itself. */
export interface Session {
  readonly connection: mysql.Connection
  readonly mariadb: boolean
  /** Set while a statement runs on the connection: closing the session then kills it on the server. */
  busy: boolean
}

/** `lock_timeout_s: 0` means "as long as the server allows" (a year is the MySQL maximum). */
const LONGEST_LOCK_WAIT_S = 31_536_000

const CONNECT_TIMEOUT_MS = 10_000

// Modes that change how the statements we send are read: ANSI_QUOTES turns backticks' partner `"` into identifier
// quotes, NO_BACKSLASH_ESCAPES breaks mysql2's escaping of parameters, PAD_CHAR_TO_FULL_LENGTH changes CHAR values,
// and NO_ZERO_DATE / NO_ZERO_IN_DATE would turn zero dates into NULL or errors in expressions instead of letting the
// source see and report them.
const DROPPED_MODES = new Set(["ANSI_QUOTES", "ANSI", "NO_BACKSLASH_ESCAPES", "PAD_CHAR_TO_FULL_LENGTH", "NO_ZERO_DATE", "NO_ZERO_IN_DATE"])

/** mysql2 options for an address: explicit fields, never the URL (its password stays out of the driver's parser). */
export const connectionOptions = (address: MysqlTarget): mysql.ConnectionOptions => ({
  host: address.host,
  port: address.port,
  user: address.user,
  ...(address.password === undefined ? {} : { password: address.password }),
  database: address.database,
  charset: "UTF8MB4_GENERAL_CI",
  connectTimeout: CONNECT_TIMEOUT_MS,
  supportBigNumbers: true,
  bigNumberStrings: true,
  dateStrings: true,
  decimalNumbers: false,
  multipleStatements: false,
  // A fresh object per connection: mysql2 caches TLS sessions per `ssl` object, and a resumed session shows no
  // certificate for the host-name check in `connect` to read.
  ...(address.tls?.ssl === undefined ? {} : { ssl: { ...address.tls.ssl } })
})

/** Runs one statement and gives its rows as arrays of text (NULL as null). */
export const queryText = (
  connection: mysql.Connection,
  sql: string,
  values: ReadonlyArray<string | null> = []
): Promise<Array<Array<string | null>>> =>
  new Promise((resolve, reject) => {
    connection.query(
      { sql, values: [...values], rowsAsArray: true, typeCast: (field) => field.string("utf8") },
      (error, rows) => (error ? reject(error) : resolve(rows as unknown as Array<Array<string | null>>))
    )
  })

/** The connection's socket: after a TLS handshake, mysql2 puts its `TLSSocket` there (not in its typings). */
const socketOf = (connection: mysql.Connection): unknown => (connection as unknown as { readonly stream?: unknown }).stream

const connect = (address: MysqlTarget): Promise<mysql.Connection> =>
  new Promise((resolve, reject) => {
    const connection = mysql.createConnection(connectionOptions(address))
    // A fatal error with no statement waiting is emitted as an event; the statement that fails next reports it.
    connection.on("error", () => {})
    connection.connect((error) => {
      // mysql2 checks an IP address against `localhost`: the host dialled is checked here, before any statement.
      const failure = error ?? serverNameProblem(socketOf(connection), address.host, address.tls?.settings)
      if (failure) {
        connection.destroy()
        reject(failure)
      } else resolve(connection)
    })
  })

const settingsSql = (mariadb: boolean, sqlMode: string, settings: SessionSettings): string => {
  const lockWait = settings.lockTimeoutS === 0 ? LONGEST_LOCK_WAIT_S : settings.lockTimeoutS
  const statementTime = mariadb
    ? `max_statement_time = ${settings.statementTimeoutS}`
    : `max_execution_time = ${settings.statementTimeoutS * 1000}`
  const modes = sqlMode.split(",").filter((mode) => mode !== "" && !DROPPED_MODES.has(mode.toUpperCase()))
  return [
    "SET SESSION time_zone = '+00:00'",
    `sql_mode = ${mysql.escape(modes.join(","))}`,
    statementTime,
    `lock_wait_timeout = ${lockWait}`,
    `innodb_lock_wait_timeout = ${Math.min(lockWait, 1_073_741_824)}`
  ].join(", ")
}

/** Kills a connection's thread from a second connection: what stops a statement whose result is no longer read. */
const killThread = (address: MysqlTarget, threadId: number): Promise<void> =>
  connect(address).then(
    (killer) =>
      queryText(killer, `KILL ${threadId}`)
        .catch(() => undefined)
        .finally(() => killer.destroy()),
    () => undefined
  ).then(() => undefined)

/** Ends a connection politely (its transaction rolls back), giving up after a second on a dead socket. */
const endQuietly = (connection: mysql.Connection): Promise<void> =>
  new Promise((resolve) => {
    const timer = setTimeout(() => {
      connection.destroy()
      resolve()
    }, 1_000)
    connection.end(() => {
      clearTimeout(timer)
      resolve()
    })
  })

/**
 * A connection in the caller's scope with the export session set up: UTC, a `sql_mode` that keeps zero dates
 * visible, the statement and lock timeouts, and — with `snapshot` — `START TRANSACTION WITH CONSISTENT SNAPSHOT,
 * READ ONLY` at REPEATABLE READ. Closing the scope ends the connection; a statement still running (an interrupted
 * read, a failure) is killed on the server first, so no session is left behind in the processlist.
 */
export const openSession = (
  address: MysqlTarget,
  settings: SessionSettings,
  context: ErrorContext,
  snapshot: boolean
): Effect.Effect<Session, SourceError, Scope.Scope> =>
  Effect.acquireRelease(
    Effect.tryPromise({
      try: () => connect(address),
      catch: (cause) => fromMysql(cause, context, `connecting to ${context.displayUrl}`)
    }).pipe(
      Effect.flatMap((connection) =>
        Effect.tryPromise({
          try: async (): Promise<Session> => {
            const [row] = await queryText(connection, "SELECT VERSION(), @@SESSION.sql_mode")
            const mariadb = /mariadb/i.test(row?.[0] ?? "")
            await queryText(connection, settingsSql(mariadb, row?.[1] ?? "", settings))
            if (snapshot) {
              await queryText(connection, "SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
              await queryText(connection, "START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
            }
            return { connection, mariadb, busy: false }
          },
          catch: (cause) => {
            connection.destroy()
            return fromMysql(cause, context, "setting up the session")
          }
        })
      )
    ),
    (session) =>
      Effect.promise(async () => {
        if (!session.busy) return endQuietly(session.connection)
        await killThread(address, session.connection.threadId)
        session.connection.destroy()
      })
  )

/** Runs one statement on a session, mapping a failure. */
export const runOn = (
  session: Session,
  context: ErrorContext,
  doing: string,
  sql: string,
  values: ReadonlyArray<string | null> = []
): Effect.Effect<Array<Array<string | null>>, SourceError> =>
  Effect.tryPromise({
    try: () => queryText(session.connection, sql, values),
    catch: (cause) => fromMysql(cause, context, doing)
  })
