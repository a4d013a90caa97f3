import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { SourceError } from "../../../core/errors.js"
import type { PluginContext, SourceDriverShape, SourceQuery } from "../../../core/plugin.js"
import { tableOf } from "../../../core/plugin.js"
import { type ResolvedConnection, resolveConnection } from "../../../core/source/connection.js"
import { mysqlChanges } from "./cdc/changes.js"
import { describeTlsSession, isTlsProblem } from "../../../core/source/tls.js"
import type { MysqlConfig } from "./config.js"
import { type ErrorContext, sourceError } from "./errors.js"
import { describeQuery, estimateQueryRows, queryBounds } from "./inspect.js"
import { openResult } from "./result.js"
import { type MysqlTarget, openSession, runOn, type SessionSettings } from "./session.js"
import { mysqlTls, resolveMysqlTls } from "./tls.js"
import { queryProblem, renderForDisplay } from "./statement.js"
import { displayAddress, isUrlProblem, makeScrubber, parseMysqlUrl, shortAddress } from "./url.js"

/** The connection URL and where it came from (`source.url`, the environment variable, the parts), for messages. */
const resolveUrl = (config: MysqlConfig, context: PluginContext): Effect.Effect<ResolvedConnection, SourceError> => {
  const resolved = resolveConnection(config, context, { scheme: "mysql", defaultPort: 3306, exampleVariable: "MYSQL_URL" })
  return "url" in resolved ? Effect.succeed(resolved) : Effect.fail(sourceError(context, resolved.message, { hint: resolved.hint }))
}

/**
 * Builds the mysql source driver. Every export read (and every planning query) has its own connection, opened in
 * the caller's scope and closed with it: one connection per export, per chunk lane.
 */
export const makeMysqlDriver = (
  config: MysqlConfig,
  context: PluginContext
): Effect.Effect<SourceDriverShape, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const resolved = yield* resolveUrl(config, context)
    const address = parseMysqlUrl(resolved.url)
    if (isUrlProblem(address)) {
      return yield* Effect.fail(sourceError(context, `${resolved.origin}: ${address.message}`, { hint: address.hint }))
    }
    const displayUrl = displayAddress(address)
    const tlsSettings = resolveMysqlTls(address, { block: config.tls, configDir: context.configDir })
    const errors: ErrorContext = {
      exportName: context.exportName,
      displayUrl,
      scrub: makeScrubber(address, resolved.url),
      tls: isTlsProblem(tlsSettings) ? undefined : tlsSettings
    }
    if (isTlsProblem(tlsSettings)) return yield* Effect.fail(sourceError(errors, tlsSettings.message, { hint: tlsSettings.hint }))
    const tls = tlsSettings === undefined
      ? undefined
      : yield* Effect.mapError(mysqlTls(tlsSettings), (problem) => sourceError(errors, problem.message, { hint: problem.hint }))
    const target: MysqlTarget = { ...address, tls }
    const settings: SessionSettings = { statementTimeoutS: config.statement_timeout_s, lockTimeoutS: config.lock_timeout_s }
    const zeroDatesAsNull = config.zero_dates === "null"

    const queryContext = (query: SourceQuery): Effect.Effect<ErrorContext, SourceError> => {
      const scoped: ErrorContext = { ...errors, exportName: query.exportName, table: tableOf(query) }
      const problem = queryProblem(query)
      return problem === undefined ? Effect.succeed(scoped) : Effect.fail(sourceError(scoped, problem))
    }
    const sessionFor = (scoped: ErrorContext) => (snapshot: boolean) => openSession(target, settings, scoped, snapshot)

    const check = Effect.scoped(
      Effect.flatMap(sessionFor(errors)(false), (session) => runOn(session, errors, "connecting", "SELECT 1"))
    ).pipe(Effect.asVoid, Effect.withSpan("MysqlSource.check"))

    // Whether the session is encrypted and with which TLS version; whether the certificate was verified (and
    // against what) is what the settings asked for: a session exists only if that check passed.
    const connectionDetail = Effect.scoped(
      Effect.flatMap(sessionFor(errors)(false), (session) =>
        runOn(session, errors, "reading Ssl_version", "SHOW SESSION STATUS LIKE 'Ssl_version'")
      )
    ).pipe(
      Effect.map((rows) => describeTlsSession(rows[0]?.[1] || undefined, tls?.settings)),
      Effect.withSpan("MysqlSource.connectionDetail")
    )

    const open = Effect.fn("MysqlSource.open")(function* (query: SourceQuery) {
      const scoped = yield* queryContext(query)
      return yield* openResult(sessionFor(scoped), query, zeroDatesAsNull, scoped)
    })

    const describe = Effect.fn("MysqlSource.describe")(function* (query: SourceQuery) {
      const scoped = yield* queryContext(query)
      return yield* describeQuery(sessionFor(scoped), query, scoped)
    })

    const bounds = Effect.fn("MysqlSource.bounds")(function* (query: SourceQuery, column: string) {
      const scoped = yield* queryContext(query)
      return yield* queryBounds(sessionFor(scoped), query, column, scoped)
    })

    const estimateRows = Effect.fn("MysqlSource.estimateRows")(function* (query: SourceQuery) {
      // EXPLAIN's row count is the rows MySQL expects to scan, not the distinct values a DISTINCT would return.
      if ((query.distinct ?? []).length > 0) return undefined
      const scoped = yield* queryContext(query)
      return yield* estimateQueryRows(sessionFor(scoped), query, scoped)
    })

    return {
      label: `MySQL(${shortAddress(address)})`,
      displayUrl,
      identity: { host: address.host, port: String(address.port), database: address.database, user: address.user },
      check,
      connectionDetail,
      open,
      describe,
      bounds,
      render: renderForDisplay,
      estimateRows,
      changes: mysqlChanges({ address: target, settings, zeroDatesAsNull, context: errors })
    }
  })
