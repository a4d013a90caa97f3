import postgres from "postgres"
import * as Effect from "effect/Effect"
import { describeCause, type SourceError, sourceErrorMaker } from "../../../core/errors.js"
import {
  type ConnectionTarget,
  isUrlProblem,
  parsePostgresUrl,
  type PostgresAddress,
  resolveConnection
} from "../../../core/source/postgres-url.js"
import { isTlsProblem, type TlsInput, type TlsSettings, tlsFailure } from "../../../core/source/postgres-tls.js"

/** What an error message may mention: the export, the masked URL; `scrub` removes any secret from library text. */
export interface ErrorContext {
  readonly exportName?: string | undefined
  readonly displayUrl: string
  readonly scrub: (text: string) => string
  /** Set when the export used a `table:` shortcut (sharpens the hint for a missing relation). */
  readonly table?: { readonly schema?: string | undefined; readonly name: string } | undefined
  /** The connection's TLS settings, to explain a certificate failure (naming the CA file). */
  readonly tls?: TlsSettings | undefined
}

/** A `SourceError` from the postgres source, its message prefixed with the export when known. */
export const sourceError = sourceErrorMaker("postgres")

/** A connection URL and the config key (or environment variable) it came from, for messages. */
export interface ResolvedUrl {
  readonly url: string
  readonly origin: string
}

/** The URL parsed once, or a failure naming where it came from (and never quoting it). */
export const addressOf = (
  resolved: ResolvedUrl,
  context: Pick<ErrorContext, "exportName">
): Effect.Effect<PostgresAddress, SourceError> => {
  const parsed = parsePostgresUrl(resolved.url)
  return isUrlProblem(parsed)
    ? Effect.fail(sourceError(context, `${resolved.origin}: ${parsed.message}`, { hint: parsed.hint }))
    : Effect.succeed(parsed)
}

/** The connection target with its TLS settings (certificate files read), or a failure naming the setting or file. */
export const targetOf = (
  address: PostgresAddress,
  tls: Omit<TlsInput, "query">,
  context: Pick<ErrorContext, "exportName">
): Effect.Effect<ConnectionTarget, SourceError> => {
  const target = resolveConnection(address, tls)
  return isTlsProblem(target) ? Effect.fail(sourceError(context, target.message, { hint: target.hint })) : Effect.succeed(target)
}

interface Rule {
  readonly retryable: boolean
  readonly hint?: (context: ErrorContext) => string
}

const RETRY = "the server may be restarting or overloaded (exit code 2: safe to run again later)"

// SQLSTATEs worth a specific word. Classes 08 (connection), 53 (resources) and 40 (transaction rollback) are
// matched by prefix below; everything else is a non-retryable error in the query or the data.
const SQLSTATE: Record<string, Rule> = {
  "28P01": { retryable: false, hint: () => "check the user name and password in the connection URL" },
  "28000": { retryable: false, hint: () => "check the user name in the URL and pg_hba.conf on the server" },
  "3D000": { retryable: false, hint: () => "check the database name at the end of the connection URL" },
  "42601": { retryable: false, hint: () => "check the SQL of the export's `query:`" },
  "42P01": {
    retryable: false,
    hint: (context) =>
      context.table === undefined
        ? "check the table names in the query and the source's `schema`"
        : "check the export's `table:` and the source's `schema` (the table must exist and be visible)"
  },
  "42703": { retryable: false, hint: () => "check the column names in the export's query" },
  "42501": {
    retryable: false,
    hint: () => "grant the export's user SELECT on the table (GRANT SELECT ON <table> TO <user>)"
  },
  "25006": { retryable: false, hint: () => "exports run in read-only transactions: the query must not write" },
  "57014": {
    retryable: false,
    hint: () => "raise the source's `statement_timeout_s` (0 = none) or export in chunks (`mode: chunked`)"
  },
  "55P03": { retryable: true, hint: () => "another session holds a lock; raise `lock_timeout_s` or retry later" },
  "53300": { retryable: true, hint: () => "the server has no free connection slots; lower concurrency or retry later" },
  "57P01": { retryable: true, hint: () => RETRY },
  "57P02": { retryable: true, hint: () => RETRY },
  "57P03": { retryable: true, hint: () => RETRY }
}

const NETWORK_CODES = new Set(["ECONNREFUSED", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH", "EAI_AGAIN", "CONNECT_TIMEOUT"])

/** An open connection that went away: the server ended the session, or the network dropped it. */
const CLOSED_CODES = new Set(["CONNECTION_CLOSED", "CONNECTION_DESTROYED", "ECONNRESET", "EPIPE", "ECONNABORTED"])

/** The connection of a running statement closed; `doing` completes "… while …". Retryable. */
export const connectionClosed = (context: ErrorContext, doing: string, detail?: string): SourceError =>
  sourceError(
    context,
    `the connection to PostgreSQL at ${context.displayUrl} was closed while ${doing}${detail === undefined ? "" : `: ${detail}`}`,
    {
      retryable: true,
      hint: "the server ended the session (a restart, a failover, pg_terminate_backend) or the network dropped it (exit code 2: safe to run again)"
    }
  )

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

/**
 * Maps anything postgres.js rejects with to a `SourceError`. `doing` completes "PostgreSQL failed while …".
 * Connection-level failures are retryable; errors in the query, permissions or data are not.
 */
export const fromPostgres = (cause: unknown, context: ErrorContext, doing: string): SourceError => {
  const text = context.scrub(describeCause(cause))
  const code = codeOf(cause)
  if (cause instanceof postgres.PostgresError) {
    const rule = SQLSTATE[cause.code] ?? classRule(cause.code)
    const serverHint = cause.hint ? context.scrub(cause.hint) : undefined
    // The server's words (and its DETAIL, e.g. the key of a unique violation) are for the user who ran the command.
    const quoted = cause.detail ? `${text} (${context.scrub(describeCause(cause.detail))})` : text
    return sourceError(context, `PostgreSQL error ${cause.code} while ${doing}: ${quoted}`, {
      retryable: rule.retryable,
      hint: rule.hint?.(context) ?? serverHint,
      code: cause.code,
      quoted
    })
  }
  const tls = tlsFailure(cause, context.tls, context.displayUrl)
  if (tls !== undefined) return sourceError(context, context.scrub(tls.message), { hint: tls.hint, code })
  if (code === "ENOTFOUND") {
    return sourceError(context, `cannot resolve the host of ${context.displayUrl}: ${text}`, {
      hint: "check the host name in the connection URL"
    })
  }
  if (code !== undefined && CLOSED_CODES.has(code)) return connectionClosed(context, doing, text)
  if (code !== undefined && NETWORK_CODES.has(code)) {
    return sourceError(context, `cannot reach PostgreSQL at ${context.displayUrl} while ${doing}: ${text}`, {
      retryable: true,
      hint: "check that the server is running and reachable from this machine (exit code 2: safe to run again later)"
    })
  }
  return sourceError(context, `PostgreSQL failed while ${doing}: ${text}`, { quoted: text })
}

const classRule = (code: string): Rule => {
  switch (code.slice(0, 2)) {
    case "08":
      return { retryable: true, hint: () => "the connection failed (exit code 2: safe to run again later)" }
    case "53":
    case "40":
      return { retryable: true, hint: () => RETRY }
    default:
      return { retryable: false }
  }
}
