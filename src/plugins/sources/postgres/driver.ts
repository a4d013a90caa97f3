import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import postgres from "postgres"
import type { SourceError } from "../../../core/errors.js"
import type { PluginContext, RenderDialect, SourceDriverShape, SourceIdentity, SourceQuery } from "../../../core/plugin.js"
import { tableOf } from "../../../core/plugin.js"
import type { PostgresConfig } from "./config.js"
import { addressOf, type ErrorContext, fromPostgres, type ResolvedUrl, sourceError, targetOf } from "./errors.js"
import { postgresChanges } from "./cdc/changes.js"
import { makeSharedOpen } from "./cdc/shared.js"
import { estimateQueryRows } from "./estimate.js"
import { describeQuery, queryBounds } from "./inspect.js"
import { openRendered } from "./rendered.js"
import { openResult } from "./result.js"
import type { SessionSettings } from "./session.js"
import { queryProblem, renderForDisplay } from "./statement.js"
import { resolveConnection } from "../../../core/source/connection.js"
import { describeTlsSession, type TlsSettings } from "../../../core/source/tls.js"
import { displayAddress, makeScrubber, type PostgresAddress } from "../../../core/source/postgres-url.js"

// Every OID postgres.js parses by default (types.js: bool, bytea, int2/4, oid, float4/8, json/jsonb, date,
// timestamp, timestamptz). An entry without `parse` removes those parsers, so each value reaches us as PostgreSQL's
// text without a per-value call; the decoders in decode.ts convert it losslessly. The identity `serialize` matters
// for filter values: they are sent untyped, the server reports the column's type, and postgres.js would otherwise
// run its serializer for that type on our text (through JS `Date` for timestamps, JSON.stringify for json, `'f'` for
// any bool that is not `true`). The cast is needed because postgres.js' types declare `parse` mandatory.
const RAW_TEXT = {
  to: 25,
  from: [16, 17, 21, 23, 26, 114, 700, 701, 1082, 1114, 1184, 3802],
  serialize: (value: unknown) => String(value)
} as unknown as postgres.PostgresType<string>

/** Connections per source at least: one per export read at a time, plus `check` and planning queries. */
const MAX_CONNECTIONS = 4

/**
 * Seconds `sql.end` waits for running queries when the source closes, before it terminates connections. Not when a
 * connection was closed under the source (pg_terminate_backend, a restart): postgres.js still counts the statement
 * that was running on it as running, so the wait would always last the full timeout.
 */
const END_TIMEOUT_S = 5

const resolveUrl = (config: PostgresConfig, context: PluginContext): Effect.Effect<ResolvedUrl, SourceError> => {
  // `embedded` is served where the program is put together (src/registry/embedded-source.ts): it starts the demo
  // server and passes its URL as `url`. Reaching here means this plugin value was used without that wiring.
  if (config.embedded !== undefined) {
    return Effect.fail(
      sourceError(context, "source.embedded: this program does not start the embedded demo PostgreSQL", {
        hint: "run it with the rivet CLI or load the config with the built-in plugins, or set `url` / `url_env`"
      })
    )
  }
  const resolved = resolveConnection(config, context, { scheme: "postgres", defaultPort: 5432, exampleVariable: "DATABASE_URL" })
  return "url" in resolved ? Effect.succeed(resolved) : Effect.fail(sourceError(context, resolved.message, { hint: resolved.hint }))
}

/** The database an address reads (the embedded demo server's wiring names its own: src/registry/embedded-source.ts). */
const identityOf = (address: PostgresAddress): SourceIdentity => ({
  host: address.hosts.map((server) => server.host).join(","),
  port: address.hosts.map((server) => String(server.port)).join(","),
  database: address.database ?? "",
  user: address.user ?? ""
})

/** `TLS TLSv1.3, certificate verified (verify-full, CA /etc/rivet/ca.pem)`, or `not encrypted (…)`. */
const describeTls = (row: { ssl?: unknown; version?: string | null } | undefined, tls: TlsSettings | undefined): string =>
  // The pool reads booleans as PostgreSQL's text (`t`), see RAW_TEXT.
  describeTlsSession(row?.ssl === true || row?.ssl === "t" ? (row.version ?? "?") : undefined, tls)

/** Builds the postgres source driver in the layer's scope; the client pool ends when the scope closes. */
export const makePostgresDriver = (
  config: PostgresConfig,
  context: PluginContext
): Effect.Effect<SourceDriverShape, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const resolved = yield* resolveUrl(config, context)
    const address = yield* addressOf(resolved, context)
    const target = yield* targetOf(address, { block: config.tls, blockPath: "source.tls", configDir: context.configDir }, context)
    const displayUrl = displayAddress(address)
    const errors: ErrorContext = { exportName: context.exportName, displayUrl, scrub: makeScrubber(resolved.url), tls: target.tls }
    let closedEarly = false
    const pool = yield* Effect.acquireRelease(
      Effect.try({
        try: () =>
          postgres(target.settingsUrl, {
            ...target.options,
            max: Math.max(MAX_CONNECTIONS, (context.concurrency ?? 1) + 2),
            prepare: false,
            fetch_types: false,
            onnotice: () => {},
            onclose: () => {
              closedEarly = true
            },
            types: { rivetText: RAW_TEXT },
            connection: {
              application_name: config.application_name,
              TimeZone: "UTC",
              DateStyle: "ISO",
              IntervalStyle: "iso_8601",
              // ≥ 1 gives shortest exact floats on PostgreSQL 12+; 3 gives exact (17-digit) ones on older servers.
              extra_float_digits: 3
            }
          }),
        catch: (cause) => fromPostgres(cause, errors, "reading the connection URL")
      }),
      (sql) => Effect.promise(() => sql.end({ timeout: closedEarly ? 0 : END_TIMEOUT_S }).catch(() => undefined))
    )
    const settings: SessionSettings = {
      statementTimeoutMs: config.statement_timeout_s * 1000,
      lockTimeoutMs: config.lock_timeout_s * 1000,
      schema: config.schema
    }

    const check = Effect.tryPromise({
      try: () => pool.unsafe("SELECT 1"),
      catch: (cause) => fromPostgres(cause, errors, "connecting")
    }).pipe(Effect.asVoid, Effect.withSpan("PostgresSource.check"))

    // pg_stat_ssl tells whether this session is encrypted and with which TLS version; whether the certificate was
    // verified (and against what) is what the settings asked for: a session exists only if that check passed.
    const connectionDetail = Effect.tryPromise({
      try: () => pool.unsafe("SELECT ssl, version FROM pg_stat_ssl WHERE pid = pg_backend_pid()"),
      catch: (cause) => fromPostgres(cause, errors, "reading pg_stat_ssl")
    }).pipe(
      Effect.map((rows) => describeTls(rows[0] as { ssl?: unknown; version?: string | null } | undefined, target.tls)),
      Effect.withSpan("PostgresSource.connectionDetail")
    )

    const queryContext = (query: SourceQuery): Effect.Effect<ErrorContext, SourceError> => {
      const context: ErrorContext = { ...errors, exportName: query.exportName, table: tableOf(query) }
      const problem = queryProblem(query)
      return problem === undefined ? Effect.succeed(context) : Effect.fail(sourceError(context, problem))
    }

    const open = Effect.fn("PostgresSource.open")(function* (query: SourceQuery) {
      return yield* openResult(pool, query, settings, yield* queryContext(query))
    })

    const rendered = Effect.fn("PostgresSource.openRendered")(function* (query: SourceQuery, dialect: RenderDialect) {
      return yield* openRendered(pool, query, dialect, settings, yield* queryContext(query))
    })

    const describe = Effect.fn("PostgresSource.describe")(function* (query: SourceQuery) {
      return yield* describeQuery(pool, query, settings, yield* queryContext(query))
    })

    const bounds = Effect.fn("PostgresSource.bounds")(function* (query: SourceQuery, column: string) {
      return yield* queryBounds(pool, query, column, settings, yield* queryContext(query))
    })

    const estimateRows = Effect.fn("PostgresSource.estimateRows")(function* (query: SourceQuery) {
      return yield* estimateQueryRows(pool, query, settings, yield* queryContext(query))
    })

    const feedSetup = { pool, target, applicationName: config.application_name, settings, context: errors }
    return {
      label: "Postgres",
      displayUrl,
      identity: identityOf(address),
      check,
      connectionDetail,
      open,
      openRendered: rendered,
      describe,
      bounds,
      render: renderForDisplay,
      estimateRows,
      changes: postgresChanges(feedSetup, yield* makeSharedOpen(feedSetup))
    }
  })
