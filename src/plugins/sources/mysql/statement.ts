import mysql from "mysql2"
import type { ColumnRef, QueryBase, RowFilter, SourceQuery } from "../../../core/plugin.js"

/** A statement with `?` placeholders and their values (mysql2 escapes them into the text it sends). */
export interface Statement {
  readonly text: string
  readonly params: ReadonlyArray<string>
}

/** `` `name` `` with embedded backticks doubled. */
export const quoteIdent = (name: string): string => `\`${name.replace(/`/g, "``")}\``

/**
 * The export's base SQL: its query as written, or `SELECT * FROM` its table with backticks (the schema is the
 * database; absent, the URL's database).
 */
export const baseSql = (base: QueryBase): string =>
  base._tag === "Query"
    ? base.sql
    : `SELECT * FROM ${base.schema === undefined ? "" : `${quoteIdent(base.schema)}.`}${quoteIdent(base.name)}`

/** Index of the last character that is neither whitespace nor inside a comment (-1 if none). */
const lastCodeIndex = (sql: string): number => {
  let last = -1
  let i = 0
  const skipTo = (end: string, from: number): number => {
    const at = sql.indexOf(end, from)
    return at < 0 ? sql.length : at + end.length
  }
  while (i < sql.length) {
    const ch = sql[i]!
    if ((ch === "-" && sql[i + 1] === "-" && /\s/.test(sql[i + 2] ?? " ")) || ch === "#") {
      i = skipTo("\n", i + 1)
    } else if (ch === "/" && sql[i + 1] === "*") {
      i = skipTo("*/", i + 2)
    } else if (ch === "'" || ch === '"' || ch === "`") {
      let j = i + 1
      while (j < sql.length && sql[j] !== ch) j += sql[j] === "\\" && ch !== "`" ? 2 : 1
      last = Math.min(j, sql.length - 1)
      i = j + 1
    } else {
      if (!/\s/.test(ch)) last = i
      i++
    }
  }
  return last
}

/** The SQL without one trailing `;`; a trailing comment is kept, so wrappers put a newline before `)`. */
export const stripTerminator = (sql: string): string => {
  const last = lastCodeIndex(sql)
  return last >= 0 && sql[last] === ";" ? `${sql.slice(0, last)}${sql.slice(last + 1)}`.trimEnd() : sql.trimEnd()
}

const renderRef = (ref: ColumnRef): string =>
  typeof ref === "string" ? quoteIdent(ref) : `COALESCE(${ref.columns.map(quoteIdent).join(", ")})`

/** Binds a filter value compared with `column` (the first column of a coalesced one). */
type Bind = (value: string, column: string) => string

const firstColumn = (ref: ColumnRef): string => (typeof ref === "string" ? ref : ref.columns[0] ?? "")

const renderFilter = (filter: RowFilter, bindTo: Bind): string => {
  const bindFor = (ref: ColumnRef) => (value: string) => bindTo(value, firstColumn(ref))
  switch (filter._tag) {
    case "Between":
      return `${quoteIdent(filter.column)} BETWEEN ${bindFor(filter.column)(filter.low)} AND ${bindFor(filter.column)(filter.high)}`
    case "IsNull":
      return `${quoteIdent(filter.column)} IS NULL`
    case "AtLeast":
      return `${quoteIdent(filter.column)} >= ${bindFor(filter.column)(filter.value)}`
    case "AtMost":
      return `${renderRef(filter.column)} <= ${bindFor(filter.column)(filter.value)}`
    case "After": {
      const binds = filter.columns.map(bindFor)
      if (filter.columns.length === 1) return `${renderRef(filter.columns[0]!)} > ${binds[0]!(filter.values[0]!)}`
      // Expanded rather than a row constructor: MySQL and MariaDB use an index for the OR form more reliably.
      // Each placeholder is bound where it appears: a value used twice is two parameters.
      const refs = filter.columns.map(renderRef)
      const terms = refs.map((_, n) =>
        [
          ...refs.slice(0, n).map((ref, k) => `${ref} = ${binds[k]!(filter.values[k]!)}`),
          `${refs[n]} > ${binds[n]!(filter.values[n]!)}`
        ].join(" AND ")
      )
      return `(${terms.map((term) => `(${term})`).join(" OR ")})`
    }
  }
}

const isPlain = (query: SourceQuery): boolean =>
  (query.where ?? []).length === 0 &&
  (query.orderBy ?? []).length === 0 &&
  query.limit === undefined &&
  (query.distinct ?? []).length === 0

const render = (query: SourceQuery, bind: Bind): string => {
  const sql = baseSql(query.base)
  if (isPlain(query)) return sql
  const where = (query.where ?? []).map((filter) => renderFilter(filter, bind))
  const orderBy = query.orderBy ?? []
  const distinct = query.distinct ?? []
  const select = distinct.length > 0 ? `DISTINCT ${distinct.map(quoteIdent).join(", ")}` : "*"
  return [
    `SELECT ${select} FROM (${stripTerminator(sql)}\n) AS _rivet`,
    ...(where.length > 0 ? [`WHERE ${where.join(" AND ")}`] : []),
    ...(orderBy.length > 0 ? [`ORDER BY ${orderBy.map(renderRef).join(", ")}`] : []),
    ...(query.limit !== undefined ? [`LIMIT ${query.limit}`] : [])
  ].join(" ")
}

/**
 * The statement the source runs: the base SQL unchanged without filters, order, limit or distinct columns; otherwise
 * wrapped as `SELECT * FROM (<sql>) AS _rivet WHERE … ORDER BY … LIMIT n` (`SELECT DISTINCT …`), values bound as string parameters (MySQL converts
 * them to the compared column's type). `valueFor` may rewrite a value for its column (see `mysqlValueText`).
 */
export const renderStatement = (
  query: SourceQuery,
  valueFor: (value: string, column: string) => string = (value) => value
): Statement => {
  const params: Array<string> = []
  const text = render(query, (value, column) => {
    params.push(valueFor(value, column))
    return "?"
  })
  return { text, params }
}

/** The same statement with the values inlined as escaped literals — for plans and reports. */
export const renderForDisplay = (query: SourceQuery): string => render(query, (value) => mysql.escape(value))

/** The query without its filters, order and limit: the same output columns, for describing them. */
export const baseQueryOf = (query: SourceQuery): SourceQuery => ({
  ...query,
  where: undefined,
  orderBy: undefined,
  limit: undefined,
  distinct: undefined
})

const ISO_TIMESTAMP = /^(\d{4,}-\d{2}-\d{2})T(\d{2}:\d{2}:\d{2}(?:\.\d{1,6})?)Z?$/

/**
 * A timestamp in the runtime's key text (`2026-01-01T10:00:00.000123Z`, as cursors and windows carry it) in
 * MySQL's own literal form (`2026-01-01 10:00:00.000123`): MariaDB reads the `T…Z` form only with a "truncated
 * incorrect datetime value" warning, MySQL 8 not at all. The session is UTC, so dropping the `Z` keeps the instant.
 */
export const mysqlTimestampText = (value: string): string => {
  const match = ISO_TIMESTAMP.exec(value)
  return match === null ? value : `${match[1]} ${match[2]}`
}

/** `SELECT * FROM (<statement>) AS _rivet_d LIMIT 0`: the output columns, without reading a row. */
export const describeStatement = (inner: Statement): Statement => ({
  text: `SELECT * FROM (${stripTerminator(inner.text)}\n) AS _rivet_d LIMIT 0`,
  params: inner.params
})

/**
 * The smallest and largest non-NULL `column` and whether it has a NULL, over the rows of `inner`, as three scalar
 * subqueries (each can be answered from an index for a plain table scan).
 */
export const boundsStatement = (inner: Statement, column: string): Statement => {
  const c = quoteIdent(column)
  const from = `FROM (${stripTerminator(inner.text)}\n) AS _rivet_b`
  const end = (direction: string) => `(SELECT ${c} ${from} WHERE ${c} IS NOT NULL ORDER BY ${c} ${direction} LIMIT 1)`
  return {
    text: `SELECT ${end("ASC")}, ${end("DESC")}, EXISTS (SELECT 1 ${from} WHERE ${c} IS NULL)`,
    params: [...inner.params, ...inner.params, ...inner.params]
  }
}

/** What makes a query impossible to render (a bug in the caller, not in the user's config), or undefined. */
export const queryProblem = (query: SourceQuery): string | undefined => {
  if (query.limit !== undefined && !(Number.isSafeInteger(query.limit) && query.limit >= 0)) {
    return `the row limit must be a non-negative integer, got ${query.limit}`
  }
  for (const filter of query.where ?? []) {
    if (filter._tag === "After" && (filter.columns.length === 0 || filter.columns.length !== filter.values.length)) {
      const got = `${filter.columns.length} column(s), ${filter.values.length} value(s)`
      return `an "after" condition needs one value per column (got ${got})`
    }
  }
  return undefined
}
