import * as Effect from "effect/Effect"
import { ConfigError } from "../../../core/errors.js"
import type { DiscoveredColumn, DiscoveredTable, Discovery, EstimateSource, SkippedTable } from "../../../core/discovery/model.js"
import type { DiscoverRequest, SourceQuery } from "../../../core/plugin.js"
import { describeFields, tableInfo } from "./catalog.js"
import { type ErrorContext, sourceError } from "./errors.js"
import { openSession, runOn } from "./session.js"
import { describeStatement, quoteIdent, renderStatement } from "./statement.js"
import { planColumn } from "./types.js"
import { displayAddress, isUrlProblem, makeScrubber, parseMysqlUrl } from "./url.js"

// Tables whose data is at most this size are counted exactly; InnoDB's TABLE_ROWS is a sampled estimate.
const COUNT_MAX_BYTES = 64 * 1024 * 1024

const TABLES_SQL =
  "SELECT TABLE_NAME, TABLE_ROWS, DATA_LENGTH FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_TYPE = 'BASE TABLE' ORDER BY TABLE_NAME"

const queryOf = (database: string, name: string): SourceQuery => ({
  exportName: "init",
  base: { _tag: "Table", schema: database, name },
  batchSize: 1,
  columnTypes: new Map()
})

/**
 * Lists the tables `rivet init` writes exports for: estimated rows, primary key, and each column typed exactly as an
 * export of the table would type it (the same describe and mapping as `open`).
 */
export const discoverMysql = Effect.fn("MysqlSource.discover")(
  function* (request: DiscoverRequest) {
    const address = parseMysqlUrl(request.url)
    const origin = request.origin ?? "the connection URL"
    if (isUrlProblem(address)) return yield* Effect.fail(sourceError({}, `${origin}: ${address.message}`, { hint: address.hint }))
    const context: ErrorContext = { displayUrl: displayAddress(address), scrub: makeScrubber(address, request.url) }
    const session = yield* openSession(address, { statementTimeoutS: 120, lockTimeoutS: 10 }, context, true)
    const database = request.schema ?? address.database
    const listed = yield* runOn(session, context, "listing tables", TABLES_SQL, [database])
    const all = listed.map(([name, rows, bytes]) => ({ name: name ?? "", rows: Number(rows ?? 0), bytes: Number(bytes ?? 0) }))
    const names = all.map((table) => table.name)
    const wanted = request.tables.map((text) => {
      const dot = text.indexOf(".")
      return dot > 0 ? { database: text.slice(0, dot), name: text.slice(dot + 1) } : { database, name: text }
    })
    for (const ref of wanted) {
      if (ref.database !== database) {
        return yield* Effect.fail(
          new ConfigError({
            path: "--table",
            message: `'${ref.database}.${ref.name}' is in another database than ${database}`,
            hint: `pass --schema ${ref.database} to list the tables of that database`
          })
        )
      }
      if (!names.includes(ref.name)) {
        return yield* Effect.fail(
          new ConfigError({
            path: "--table",
            message: `no table named '${ref.name}' in database '${database}'`,
            hint: names.length > 0 ? `tables in ${database}: ${names.slice(0, 20).join(", ")}${names.length > 20 ? ", …" : ""}` : "the database has no tables"
          })
        )
      }
    }
    if (all.length === 0) {
      return yield* Effect.fail(
        new ConfigError({ path: "--schema", message: `database '${database}' has no tables (or does not exist)`, hint: "pass --schema <database>" })
      )
    }
    const chosen = wanted.length === 0 ? all : all.filter((table) => wanted.some((ref) => ref.name === table.name))
    const skipped: Array<SkippedTable> = []
    const tables: Array<DiscoveredTable> = []
    for (const table of chosen) {
      const query = queryOf(database, table.name)
      const fields = yield* describeFields(session, describeStatement(renderStatement(query)), context).pipe(Effect.either)
      if (fields._tag === "Left") {
        skipped.push({ schema: database, name: table.name, reason: fields.left.message })
        continue
      }
      const info = yield* tableInfo(session, query, context)
      const columns: Array<DiscoveredColumn> = fields.right.map((field) => {
        const planned = planColumn(field, info.jsonColumns.has(field.name), undefined)
        if ("plan" in planned) return { name: field.name, sourceType: planned.plan.sourceType, type: planned.plan.type }
        const stored = "plan" in planColumn(field, false, { kind: "bytes" })
        return {
          name: field.name,
          sourceType: stored ? "geometry" : `type ${field.columnType}`,
          problem: { kind: "type" as const, reason: planned.problem.reason, override: stored ? "bytes" : "string" }
        }
      })
      const exact = table.bytes <= COUNT_MAX_BYTES
      const counted = exact
        ? yield* runOn(session, context, `counting the rows of ${database}.${table.name}`, `SELECT COUNT(*) FROM ${quoteIdent(database)}.${quoteIdent(table.name)}`)
        : []
      const estimateSource: EstimateSource = exact ? "count" : "statistics"
      tables.push({
        schema: database,
        name: table.name,
        estimatedRows: exact ? Number(counted[0]?.[0] ?? 0) : table.rows,
        estimateSource,
        columns,
        primaryKey: info.primaryKey
      })
    }
    if (tables.length === 0) {
      return yield* Effect.fail(
        sourceError(context, "no table left to export", { hint: skipped.map((table) => `${table.name}: ${table.reason}`).join("; ") })
      )
    }
    return {
      sourceType: "mysql",
      displaySource: context.displayUrl,
      tables,
      skipped,
      defaultSchema: address.database,
      quoteIdentifier: quoteIdent
    } satisfies Discovery
  },
  Effect.scoped
)
