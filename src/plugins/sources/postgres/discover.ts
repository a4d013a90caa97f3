import * as Effect from "effect/Effect"
import postgres from "postgres"
import { didYouMean } from "../../../core/did-you-mean.js"
import { parseLogicalType } from "../../../core/columns/logical.js"
import { ConfigError, type SourceError } from "../../../core/errors.js"
import type {
  ColumnProblem,
  DiscoveredColumn,
  DiscoveredTable,
  Discovery,
  EstimateSource,
  SkippedTable
} from "../../../core/discovery/model.js"
import type { DiscoverRequest } from "../../../core/plugin.js"
import { type DescribedColumn, loadCatalog } from "./catalog.js"
import { addressOf, type ErrorContext, fromPostgres, sourceError, targetOf } from "./errors.js"
import { attemptOn, openSession } from "./session.js"
import { quoteIdent } from "./statement.js"
import { planColumn, resolveShape, type Shape } from "./types.js"
import { displayAddress, makeScrubber } from "../../../core/source/postgres-url.js"

// Tables never analyzed (reltuples < 0) up to this size are counted exactly; bigger ones get the planner's estimate.
const COUNT_MAX_BYTES = 64 * 1024 * 1024

// Base and partitioned tables (partitions are read through their parent). Values come back as one JSON text.
const TABLES_SQL = `
select coalesce(json_agg(json_build_array(c.oid::int8, n.nspname, c.relname, c.relkind, c.reltuples::float8,
    c.relpages::int8, pg_catalog.pg_relation_size(c.oid)::int8, pg_catalog.has_table_privilege(c.oid, 'SELECT'))
  order by n.nspname, c.relname), '[]')::text,
  current_setting('block_size')::int8
from pg_catalog.pg_class c
join pg_catalog.pg_namespace n on n.oid = c.relnamespace
where n.nspname = any($1::text[]) and c.relkind in ('r', 'p') and not c.relispartition`

const COLUMNS_SQL = `
select
  (select coalesce(json_agg(json_build_array(a.attrelid::int8, a.attnum, a.attname, a.atttypid::int8)
      order by a.attrelid, a.attnum), '[]')::text
   from pg_catalog.pg_attribute a
   where a.attrelid = any($1::oid[]) and a.attnum > 0 and not a.attisdropped),
  (select coalesce(json_agg(json_build_array(i.indrelid::int8, a.attname) order by i.indrelid, k.position), '[]')::text
   from pg_catalog.pg_index i
   cross join lateral unnest(i.indkey::int2[]) with ordinality as k(attnum, position)
   join pg_catalog.pg_attribute a on a.attrelid = i.indrelid and a.attnum = k.attnum
   where i.indrelid = any($1::oid[]) and i.indisprimary)`

const SCHEMAS_SQL = `
select coalesce(json_agg(distinct n.nspname), '[]')::text
from pg_catalog.pg_class c join pg_catalog.pg_namespace n on n.oid = c.relnamespace
where c.relkind in ('r', 'p') and n.nspname not in ('pg_catalog', 'information_schema') and n.nspname not like 'pg_toast%'`

type TableRow = [number, string, string, string, number, number, number, boolean]

// json/jsonb as text (catalog.ts parses them itself); everything else the queries return is text already.
const JSON_AS_TEXT = { to: 25, from: [114, 3802], serialize: (value: unknown) => String(value) } as unknown as postgres.PostgresType<string>

const firstText = (rows: ReadonlyArray<ReadonlyArray<unknown>>, index = 0): string => String(rows[0]?.[index] ?? "[]")

interface TableRef {
  readonly schema: string
  readonly name: string
}

const refOf = (text: string, schema: string): TableRef => {
  const dot = text.indexOf(".")
  return dot > 0 ? { schema: text.slice(0, dot), name: text.slice(dot + 1) } : { schema, name: text }
}

/** Up to five names close to `wanted` (edit distance, then containment), closest first. */
const closeMatches = (wanted: string, known: ReadonlyArray<string>): Array<string> => {
  const found: Array<string> = []
  let rest = [...known]
  for (let next = didYouMean(wanted, rest); next !== undefined && found.length < 3; next = didYouMean(wanted, rest)) {
    found.push(next)
    rest = rest.filter((name) => name !== next)
  }
  const lower = wanted.toLowerCase()
  for (const name of rest) if (found.length < 5 && (name.toLowerCase().includes(lower) || lower.includes(name.toLowerCase()))) found.push(name)
  return found
}

const unknownTable = (ref: TableRef, inSchema: ReadonlyArray<string>, schemas: ReadonlyArray<string>): ConfigError => {
  const close = closeMatches(ref.name, inSchema)
  return new ConfigError({
    path: "--table",
    message: `no table named '${ref.name}' in schema '${ref.schema}'`,
    hint:
      close.length > 0
        ? `did you mean: ${close.join(", ")}?`
        : inSchema.length > 0
          ? `tables in ${ref.schema}: ${inSchema.slice(0, 20).join(", ")}${inSchema.length > 20 ? ", …" : ""}`
          : `schemas with tables: ${schemas.join(", ") || "(none)"}; pass --schema or write the table as schema.table`
  })
}

/** The override that makes a column without a faithful default mapping run, checked against the source's rules. */
const problemOf = (table: TableRef, name: string, shape: Shape, reason: string): ColumnProblem => {
  const numeric = (s: Shape): boolean => s.kind === "scalar" && s.base === "numeric"
  const precision = numeric(shape) || (shape.kind === "array" && numeric(shape.element))
  const override = precision ? (shape.kind === "array" ? "list<decimal(38,9)>" : "decimal(38,9)") : "string"
  const target = parseLogicalType(override)
  const fits = target !== undefined && "plan" in planColumn(name, shape, target)
  if (!precision || !fits) return { kind: "type", reason, override: "string" }
  const column = quoteIdent(name)
  const check =
    shape.kind === "scalar"
      ? `SELECT max(scale(${column})) AS max_scale, max(length(trunc(abs(${column}))::text)) AS max_integer_digits ` +
        `FROM ${quoteIdent(table.schema)}.${quoteIdent(table.name)}`
      : undefined
  return { kind: "precision", reason, override, check }
}

/**
 * Lists the tables `rivet init` writes exports for, in one read-only transaction: estimated rows, primary key, and
 * each column typed exactly as an export of the table would type it (same catalog mapping as `open`).
 */
export const discoverPostgres = Effect.fn("PostgresSource.discover")(
  function* (request: DiscoverRequest) {
    const url = request.url
    const schema = request.schema ?? "public"
    const address = yield* addressOf({ url, origin: request.origin ?? "the connection URL" }, {})
    const target = yield* targetOf(address, {}, {})
    const context: ErrorContext = { displayUrl: displayAddress(address), scrub: makeScrubber(url), tls: target.tls }
    const pool = yield* Effect.acquireRelease(
      Effect.try({
        try: () =>
          postgres(target.settingsUrl, {
            ...target.options,
            max: 1,
            prepare: false,
            fetch_types: false,
            onnotice: () => {},
            types: { jsonText: JSON_AS_TEXT },
            connection: { application_name: "rivet init", default_transaction_read_only: true }
          }),
        catch: (cause) => fromPostgres(cause, context, "reading the connection URL")
      }),
      (sql) => Effect.promise(() => sql.end({ timeout: 5 }).catch(() => undefined))
    )
    const sql = yield* openSession(
      pool,
      { statementTimeoutMs: 120_000, lockTimeoutMs: 10_000, schema },
      context
    )
    const wanted = request.tables.map((text) => refOf(text, schema))
    const schemas = [...new Set([schema, ...wanted.map((ref) => ref.schema)])]
    const listed = yield* attemptOn(sql, context, "listing tables", () =>
      sql.unsafe(TABLES_SQL, [`{${schemas.map((s) => JSON.stringify(s)).join(",")}}`]).values()
    )
    const blockSize = Number(listed[0]?.[1] ?? 8192)
    const all = JSON.parse(firstText(listed)) as Array<TableRow>
    const allSchemas = (): Effect.Effect<ReadonlyArray<string>, SourceError> =>
      attemptOn(sql, context, "listing schemas", () => sql.unsafe(SCHEMAS_SQL).values()).pipe(
        Effect.map((rows) => (JSON.parse(firstText(rows)) as Array<string>).sort())
      )

    let chosen: Array<TableRow>
    if (wanted.length === 0) {
      chosen = all.filter((row) => row[1] === schema)
      if (chosen.length === 0) {
        const known = yield* allSchemas()
        return yield* Effect.fail(
          new ConfigError({
            path: "--schema",
            message: `schema '${schema}' has no tables (or does not exist)`,
            hint: `schemas with tables: ${known.join(", ") || "(none)"}`
          })
        )
      }
    } else {
      chosen = []
      for (const ref of wanted) {
        const row = all.find((r) => r[1] === ref.schema && r[2] === ref.name)
        if (row === undefined) {
          const inSchema = all.filter((r) => r[1] === ref.schema).map((r) => r[2])
          return yield* Effect.fail(unknownTable(ref, inSchema, inSchema.length > 0 ? [] : yield* allSchemas()))
        }
        if (!row[7]) {
          return yield* Effect.fail(
            sourceError(context, `the connecting user may not read ${ref.schema}.${ref.name}`, {
              hint: `GRANT SELECT ON ${quoteIdent(ref.schema)}.${quoteIdent(ref.name)} TO <user>`
            })
          )
        }
        if (!chosen.includes(row)) chosen.push(row)
      }
    }
    const skipped: Array<SkippedTable> = chosen
      .filter((row) => !row[7])
      .map((row) => ({ schema: row[1], name: row[2], reason: "the connecting user has no SELECT privilege" }))
    const readable = chosen.filter((row) => row[7])

    const shapes = yield* attemptOn(sql, context, "reading columns and primary keys", () =>
      sql.unsafe(COLUMNS_SQL, [`{${readable.map((row) => row[0]).join(",")}}`]).values()
    )
    const attributes = JSON.parse(firstText(shapes, 0)) as Array<[number, number, string, number]>
    const keys = JSON.parse(firstText(shapes, 1)) as Array<[number, string]>
    const described: Array<DescribedColumn> = attributes.map(([table, number, name, type]) => ({ name, type, table, number }))
    const catalog = yield* attemptOn(sql, context, "reading column types from the catalog", () => loadCatalog(sql, described))

    const tables: Array<DiscoveredTable> = []
    for (const [oid, schema, name, kind, reltuples, relpages, bytes] of readable) {
      const ref = { schema, name }
      const columns: Array<DiscoveredColumn> = described
        .filter((column) => column.table === oid)
        .map((column) => {
          const attribute = catalog.attributes.get(`${column.table}:${column.number}`)
          const shape = resolveShape(catalog.types, attribute?.type ?? column.type, attribute?.typmod ?? -1)
          const planned = planColumn(column.name, shape, undefined)
          return "plan" in planned
            ? { name: column.name, sourceType: shape.name, type: planned.plan.type }
            : { name: column.name, sourceType: shape.name, problem: problemOf(ref, column.name, shape, planned.problem.reason) }
        })
      if (columns.length === 0) {
        skipped.push({ schema, name, reason: "it has no columns" })
        continue
      }
      const estimate = yield* estimateRows(sql, context, ref, { kind, reltuples, relpages, bytes, blockSize })
      tables.push({
        schema,
        name,
        ...estimate,
        columns,
        primaryKey: keys.filter(([table]) => table === oid).map(([, column]) => column)
      })
    }
    if (tables.length === 0) {
      return yield* Effect.fail(
        sourceError(context, "no table left to export", {
          hint: skipped.map((table) => `${table.schema}.${table.name}: ${table.reason}`).join("; ")
        })
      )
    }
    return { sourceType: "postgres", displaySource: context.displayUrl, tables, skipped } satisfies Discovery
  },
  Effect.scoped
)

interface Statistics {
  readonly kind: string
  readonly reltuples: number
  readonly relpages: number
  readonly bytes: number
  readonly blockSize: number
}

// Like the planner: the analyzed density (rows per page) times the table's current size, so growth since the last
// ANALYZE counts. Never analyzed (reltuples -1 since PostgreSQL 14; 0 with 0 pages before): count a small table,
// ask the planner about a big one. Partitioned parents have no statistics of their own: the planner sums partitions.
const estimateRows = (
  sql: postgres.TransactionSql,
  context: ErrorContext,
  ref: TableRef,
  stats: Statistics
): Effect.Effect<{ estimatedRows: number; estimateSource: EstimateSource }, SourceError> => {
  const table = `${quoteIdent(ref.schema)}.${quoteIdent(ref.name)}`
  const analyzed = stats.reltuples >= 0 && !(stats.reltuples === 0 && stats.relpages === 0 && stats.bytes > 0)
  if (stats.kind === "r" && analyzed) {
    const pages = stats.bytes / stats.blockSize
    const rows = stats.relpages > 0 ? (stats.reltuples / stats.relpages) * pages : stats.reltuples
    return Effect.succeed({ estimatedRows: Math.round(rows), estimateSource: "statistics" })
  }
  if (stats.kind === "r" && stats.bytes <= COUNT_MAX_BYTES) {
    return attemptOn(sql, context, `counting the rows of ${ref.schema}.${ref.name}`, () =>
      sql.unsafe(`select count(*)::text from ${table}`).values()
    ).pipe(Effect.map((rows) => ({ estimatedRows: Number(rows[0]?.[0] ?? 0), estimateSource: "count" as const })))
  }
  return attemptOn(sql, context, `estimating the rows of ${ref.schema}.${ref.name}`, () =>
    sql.unsafe(`explain (format json) select * from ${table}`).values()
  ).pipe(
    Effect.map((rows) => {
      const plan = JSON.parse(String(rows[0]?.[0] ?? "[]")) as Array<{ Plan?: { "Plan Rows"?: number } }>
      return { estimatedRows: Math.round(plan[0]?.Plan?.["Plan Rows"] ?? 0), estimateSource: "planner" as const }
    })
  )
}
