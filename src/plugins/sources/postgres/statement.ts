import type { ColumnRef, QueryBase, RowFilter, SourceQuery } from "../../../core/plugin.js"

/** A statement ready for the extended protocol: every value is a text parameter (`$1`, `$2`, …). */
export interface Statement {
  readonly text: string
  readonly params: ReadonlyArray<string>
}

/** `"name"` with embedded quotes doubled. */
export const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`

/** `'value'` with embedded quotes doubled (standard_conforming_strings: backslashes are plain characters). */
export const quoteLiteral = (value: string): string => `'${value.replace(/'/g, "''")}'`

/**
 * `E'value'`: a string literal read the same whatever `standard_conforming_strings` says — backslashes and quotes
 * are both doubled inside an escape string. For statements that cannot take parameters (COPY).
 */
export const quoteEscapedLiteral = (value: string): string => `E'${value.replace(/\\/g, "\\\\").replace(/'/g, "''")}'`

/** A column, or `COALESCE("a", "b")` for a coalesced one. */
const renderRef = (ref: ColumnRef): string =>
  typeof ref === "string" ? quoteIdent(ref) : `COALESCE(${ref.columns.map(quoteIdent).join(", ")})`

const isPlain = (query: SourceQuery): boolean =>
  (query.where ?? []).length === 0 &&
  (query.orderBy ?? []).length === 0 &&
  query.limit === undefined &&
  (query.distinct ?? []).length === 0

/** A table as `SELECT * FROM "schema"."table"` (no schema: the search path's), or the export's query as written. */
export const baseSql = (base: QueryBase): string =>
  base._tag === "Query" ? base.sql : `SELECT * FROM ${base.schema === undefined ? "" : `${quoteIdent(base.schema)}.`}${quoteIdent(base.name)}`

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
    if (ch === "-" && sql[i + 1] === "-") {
      i = skipTo("\n", i + 2)
    } else if (ch === "/" && sql[i + 1] === "*") {
      // PostgreSQL block comments nest.
      let depth = 1
      i += 2
      while (i < sql.length && depth > 0) {
        const step = sql.startsWith("/*", i) ? 1 : sql.startsWith("*/", i) ? -1 : 0
        depth += step
        i += step === 0 ? 1 : 2
      }
    } else if (ch === "'" || ch === '"') {
      let j = i + 1
      while (j < sql.length && !(sql[j] === ch && sql[j + 1] !== ch)) j += sql[j] === ch ? 2 : 1
      last = Math.min(j, sql.length - 1)
      i = j + 1
    } else if (ch === "$") {
      const tag = /^\$[A-Za-z_][A-Za-z0-9_]*\$|^\$\$/.exec(sql.slice(i))?.[0]
      // `$1` is a parameter and `a$b$` an identifier, not the start of a dollar-quoted string.
      if (tag === undefined || /[A-Za-z0-9_]/.test(sql[i - 1] ?? "")) {
        last = i++
        continue
      }
      i = skipTo(tag, i + tag.length)
      last = i - 1
    } else {
      if (!/\s/.test(ch)) last = i
      i++
    }
  }
  return last
}

// One trailing `;` (even before a trailing comment) would end the statement inside the parentheses; a trailing
// `-- comment` would swallow the closing parenthesis, hence the newline before it.
export const stripTerminator = (sql: string): string => {
  const last = lastCodeIndex(sql)
  return last >= 0 && sql[last] === ";" ? `${sql.slice(0, last)}${sql.slice(last + 1)}`.trimEnd() : sql.trimEnd()
}

const renderFilter = (filter: RowFilter, bind: (value: string) => string): string => {
  switch (filter._tag) {
    case "Between":
      return `${quoteIdent(filter.column)} BETWEEN ${bind(filter.low)} AND ${bind(filter.high)}`
    case "IsNull":
      return `${quoteIdent(filter.column)} IS NULL`
    case "AtLeast":
      return `${quoteIdent(filter.column)} >= ${bind(filter.value)}`
    case "AtMost":
      return `${renderRef(filter.column)} <= ${bind(filter.value)}`
    case "After": {
      if (filter.columns.length === 1) return `${renderRef(filter.columns[0]!)} > ${bind(filter.values[0]!)}`
      const columns = filter.columns.map(renderRef).join(", ")
      const values = filter.values.map(bind).join(", ")
      return `(${columns}) > (${values})`
    }
  }
}

const render = (query: SourceQuery, bind: (value: string) => string): string => {
  if (isPlain(query)) return baseSql(query.base)
  const where = (query.where ?? []).map((filter) => renderFilter(filter, bind))
  const orderBy = query.orderBy ?? []
  const distinct = query.distinct ?? []
  const select = distinct.length > 0 ? `DISTINCT ${distinct.map(quoteIdent).join(", ")}` : "*"
  return [
    `SELECT ${select} FROM (${stripTerminator(baseSql(query.base))}\n) AS _rivet`,
    ...(where.length > 0 ? [`WHERE ${where.join(" AND ")}`] : []),
    ...(orderBy.length > 0 ? [`ORDER BY ${orderBy.map(renderRef).join(", ")}`] : []),
    ...(query.limit !== undefined ? [`LIMIT ${query.limit}`] : [])
  ].join(" ")
}

/**
 * The statement the source runs for a query: the base SQL (the query as written, or `SELECT * FROM` the table) when the
 * query has no filters, order, limit or distinct columns; otherwise the base SQL wrapped as
 * `SELECT * FROM (<sql>) AS _rivet WHERE … ORDER BY … LIMIT n` (`SELECT DISTINCT "a", …` for distinct columns). Filter values are
 * bound as untyped text parameters, so PostgreSQL reads them with the compared column's input function.
 */
export const renderStatement = (query: SourceQuery): Statement => {
  const params: Array<string> = []
  const text = render(query, (value) => `$${params.push(value)}`)
  return { text, params }
}

/**
 * The statement with every filter value inlined as an escape-string literal, for COPY (which takes no parameters).
 * The literals stay untyped, as the parameters of `renderStatement` are: PostgreSQL resolves each with the compared
 * column's type and reads it with that type's input function, exactly as it read the parameter.
 */
export const renderInline = (query: SourceQuery): string => render(query, quoteEscapedLiteral)

/**
 * `COPY (<select>) TO STDOUT (FORMAT binary)`. Columns flagged in `rendered` are turned into PostgreSQL's text for
 * them (their type's output function, as the text protocol gave it: `format('%s', …)`, NULL kept): the SELECT is
 * wrapped and its columns renamed by position, so duplicate column names survive.
 */
export const copyStatement = (select: string, rendered: ReadonlyArray<boolean>): string => {
  const inner = stripTerminator(select)
  if (!rendered.some((text) => text)) return `COPY (${inner}\n) TO STDOUT (FORMAT binary)`
  const names = rendered.map((_, i) => `_rivet_copy."c${i + 1}"`)
  const columns = rendered.map((text, i) =>
    text ? `CASE WHEN num_nulls(${names[i]}) = 0 THEN format('%s', ${names[i]}) END` : names[i]
  )
  const aliases = rendered.map((_, i) => `"c${i + 1}"`).join(", ")
  return `COPY (SELECT ${columns.join(", ")} FROM (${inner}\n) AS _rivet_copy(${aliases})) TO STDOUT (FORMAT binary)`
}

/** The same statement with the parameters inlined as quoted literals — for plans and reports, never executed. */
export const renderForDisplay = (query: SourceQuery): string => render(query, quoteLiteral)

/**
 * The smallest and largest non-NULL `column` as text and whether it has a NULL, over the rows of `inner` (the
 * rendered query). `ORDER BY … LIMIT 1` rather than min()/max(): it works for every type with a btree order (there
 * is no min(uuid) before PostgreSQL 18) and, as three scalar subqueries, each part can be answered from an index
 * when the query is a plain table scan — the same plan PostgreSQL makes for min/max.
 */
export const boundsStatement = (inner: Statement, column: string): Statement => {
  const c = quoteIdent(column)
  const from = `FROM (${stripTerminator(inner.text)}\n) AS _rivet_b`
  const end = (direction: string) =>
    `(SELECT ${c} ${from} WHERE ${c} IS NOT NULL ORDER BY ${c} ${direction} LIMIT 1)::text`
  return {
    text: `SELECT ${end("ASC")}, ${end("DESC")}, EXISTS (SELECT 1 ${from} WHERE ${c} IS NULL)`,
    params: inner.params
  }
}

/** What makes a query impossible to render (a bug in the caller, not in the user's config), or undefined. */
export const queryProblem = (query: SourceQuery): string | undefined => {
  if (query.limit !== undefined && !(Number.isSafeInteger(query.limit) && query.limit >= 0)) {
    return `the row limit must be a non-negative integer, got ${query.limit}`
  }
  for (const filter of query.where ?? []) {
    const values = filter._tag === "Between" ? [filter.low, filter.high] : filter._tag === "After" ? filter.values : filter._tag === "IsNull" ? [] : [filter.value]
    if (values.some((value) => value.includes("\u0000"))) {
      return "a filter value contains a NUL character, which PostgreSQL text cannot hold"
    }
    if (filter._tag === "After" && (filter.columns.length === 0 || filter.columns.length !== filter.values.length)) {
      const got = `${filter.columns.length} column(s), ${filter.values.length} value(s)`
      return `an "after" condition needs one value per column (got ${got})`
    }
  }
  return undefined
}
