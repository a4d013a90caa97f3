import { describeCause, type SourceError, sourceErrorMaker } from "../../../core/errors.js"
import type { TlsSettings } from "../../../core/source/tls.js"
import { mysqlTlsFailure } from "./tls.js"

/** What an error message may mention: the export, the masked URL; `scrub` removes any secret from library text. */
export interface ErrorContext {
  readonly exportName?: string | undefined
  readonly displayUrl: string
  readonly scrub: (text: string) => string
  readonly table?: { readonly schema?: string | undefined; readonly name: string } | undefined
  /** The connection's TLS settings, to explain a certificate failure (naming the CA file). */
  readonly tls?: TlsSettings | undefined
}

/** A `SourceError` from the mysql source, its message prefixed with the export when known. */
export const sourceError = sourceErrorMaker("mysql")

interface Rule {
  readonly retryable: boolean
  readonly hint?: (context: ErrorContext) => string
}

const AGAIN = "exit code 2: safe to run again later"

// Server error numbers worth a specific word; anything else is an error in the query or the data (not retryable).
const SERVER_ERRORS: Record<number, Rule> = {
  1045: { retryable: false, hint: () => "check the user name and password in the connection URL" },
  1044: { retryable: false, hint: () => "grant the user access to the database (GRANT SELECT ON db.* TO user)" },
  1049: { retryable: false, hint: () => "check the database name at the end of the connection URL" },
  1064: { retryable: false, hint: () => "check the SQL of the export's `query:` (MySQL syntax: backticks quote names)" },
  1146: {
    retryable: false,
    hint: (context) =>
      context.table === undefined
        ? "check the table names in the query"
        : "check the export's `table:` (the table must exist in the URL's database, or write `database.table`)"
  },
  1054: { retryable: false, hint: () => "check the column names in the export's query" },
  1142: { retryable: false, hint: () => "grant the export's user SELECT on the table (GRANT SELECT ON db.table TO user)" },
  1143: { retryable: false, hint: () => "grant the export's user SELECT on the columns read" },
  1792: { retryable: false, hint: () => "exports run in read-only transactions: the query must not write" },
  1060: { retryable: false, hint: () => "give every output column of the query its own name (AS …)" },
  // MariaDB max_statement_time, MySQL max_execution_time.
  1969: { retryable: false, hint: () => "raise the source's `statement_timeout_s` (0 = none) or export in chunks (`mode: chunked`)" },
  3024: { retryable: false, hint: () => "raise the source's `statement_timeout_s` (0 = none) or export in chunks (`mode: chunked`)" },
  1205: { retryable: true, hint: () => `another session holds a lock; raise \`lock_timeout_s\` or retry later (${AGAIN})` },
  1213: { retryable: true, hint: () => `a deadlock ended the statement (${AGAIN})` },
  1040: { retryable: true, hint: () => `the server has no free connections; lower parallel or retry later (${AGAIN})` },
  1053: { retryable: true, hint: () => `the server is shutting down (${AGAIN})` },
  // KILL QUERY / KILL CONNECTION from another session.
  1317: { retryable: true, hint: () => `another session killed the statement (${AGAIN})` },
  1927: { retryable: true, hint: () => `another session killed the connection (${AGAIN})` }
}

const NETWORK_CODES = new Set(["ECONNREFUSED", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN"])

/** An open connection that went away: the server ended the session, or the network dropped it. */
const CLOSED_CODES = new Set([
  "PROTOCOL_CONNECTION_LOST",
  "ECONNRESET",
  "EPIPE",
  "ECONNABORTED",
  "ER_CONNECTION_KILLED",
  "ER_SERVER_SHUTDOWN",
  "ER_NET_READ_ERROR"
])

const field = (cause: unknown, name: string): unknown =>
  typeof cause === "object" && cause !== null && name in cause ? (cause as Record<string, unknown>)[name] : undefined

/** The connection of a running statement closed; `doing` completes "… while …". Retryable. */
export const connectionClosed = (context: ErrorContext, doing: string, detail?: string): SourceError =>
  sourceError(
    context,
    `the connection to ${context.displayUrl} was closed while ${doing}${detail === undefined ? "" : `: ${detail}`}`,
    {
      retryable: true,
      hint: `the server ended the session (a restart, a failover, KILL) or the network dropped it (${AGAIN})`
    }
  )

/**
 * Maps anything mysql2 fails with to a `SourceError`. `doing` completes "MySQL failed while …". Connection-level
 * failures (and a killed statement) are retryable; errors in the query, permissions or data are not.
 */
export const fromMysql = (cause: unknown, context: ErrorContext, doing: string): SourceError => {
  const text = context.scrub(describeCause(cause))
  const code = field(cause, "code")
  const errno = field(cause, "errno")
  const tls = mysqlTlsFailure(cause, context.tls, context.displayUrl)
  // Not scrubbed: it holds the masked URL, file paths and Node's text, and the scrubber would mask the masked URL.
  if (tls !== undefined) return sourceError(context, tls.message, { hint: tls.hint, code: typeof code === "string" ? code : undefined })
  if (typeof code === "string" && CLOSED_CODES.has(code)) return connectionClosed(context, doing, text)
  if (typeof errno === "number" && typeof field(cause, "sqlState") === "string") {
    const rule = SERVER_ERRORS[errno] ?? { retryable: false }
    return sourceError(context, `MySQL error ${errno} (${String(code)}) while ${doing}: ${text}`, {
      retryable: rule.retryable,
      hint: rule.hint?.(context),
      code: String(errno),
      quoted: text
    })
  }
  if (code === "ENOTFOUND") {
    return sourceError(context, `cannot resolve the host of ${context.displayUrl}: ${text}`, {
      hint: "check the host name in the connection URL"
    })
  }
  if (typeof code === "string" && NETWORK_CODES.has(code)) {
    return sourceError(context, `cannot reach MySQL at ${context.displayUrl} while ${doing}: ${text}`, {
      retryable: true,
      hint: `check that the server is running and reachable from this machine (${AGAIN})`
    })
  }
  if (field(cause, "fatal") === true) return connectionClosed(context, doing, text)
  return sourceError(context, `MySQL failed while ${doing}: ${text}`, { quoted: text })
}
