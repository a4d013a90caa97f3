import type { BatchSchema, LogicalType } from "../../../core/batch.js"
import type { CsvFix } from "./csv-native-fix.js"
import { quoteLiteral } from "./statement.js"

/**
 * SQL that makes PostgreSQL write Rivet's CSV itself (`COPY (…) TO STDOUT (FORMAT csv)`): one expression per column
 * giving exactly the text the CSV format writes for the value (docs/formats/csv.md), NULL staying NULL — COPY then
 * quotes fields as RFC 4180 needs, an empty string as `""` and NULL as an empty field, the same rules as ours.
 * The session runs with TimeZone UTC, DateStyle ISO, IntervalStyle iso_8601 and shortest float output (session.ts).
 *
 * Timestamps, times and floats are the exception: their columns are left in PostgreSQL's own text (a timestamp of
 * years 1–9999 as `2024-01-31 12:00:00.5+00`, a float as `1e-05`), cheaper for the server than `to_char` or an
 * exponent reshaped in SQL, and rewritten into Rivet's spelling on the client by csv-native-fix.ts (each column's
 * `CsvFix`). Values outside the common case (other years, infinities) keep their expression here.
 *
 * A value the typed path refuses (an infinite date, a NaN numeric, a timestamp beyond 64-bit microseconds since
 * 1970, a multi-dimensional array) fails the statement here too: the expression casts an explanation, which
 * includes the value, to integer, and PostgreSQL reports `invalid input syntax for type integer: "rivet: …"`. The
 * explanation depends on the value so that the planner cannot fold the cast into a constant and fail every query.
 */

/** The column's value, or a statement error explaining why it cannot be written (see above). */
const refuse = (ref: string, name: string, what: string, fix: string): string =>
  `((${quoteLiteral(`rivet: column "${name}": ${what} `)} || ${ref}::text || ${quoteLiteral(` ${fix}`)})::int::text)`

const NO_INFINITY = "has no representation outside PostgreSQL: filter it out or replace it in SQL, e.g. NULLIF(col, 'infinity')"

/**
 * ISO 8601 dates and timestamps (`format`: the to_char pattern after the year), years 0000–9999 in four digits and
 * the others in expanded form (`+10000`, `-0001`; 1 BC is year 0000), as the typed path writes them. Years 1–9999
 * are PostgreSQL's ISO text (`ref::text`): a date's is already Rivet's, a timestamp's is fixed on the client.
 */
const temporalText = (ref: string, name: string, format: string | undefined, suffix: string, latest: string | undefined): string => {
  const year = `(extract(year from ${ref})::int + CASE WHEN ${ref} < '0001-01-01' THEN 1 ELSE 0 END)`
  const two = (field: string) => `lpad(extract(${field} from ${ref})::text, 2, '0')`
  // A date past 294276 cannot be cast to the timestamp to_char takes: month and day come from extract.
  const rest = format === undefined ? `'-' || ${two("month")} || '-' || ${two("day")}` : `to_char(${ref}, '${format}')`
  const expanded =
    `(CASE WHEN ${year} < 0 THEN '-' WHEN ${year} > 9999 THEN '+' ELSE '' END` +
    ` || CASE WHEN abs(${year}) < 1000 THEN lpad(abs(${year})::text, 4, '0') ELSE abs(${year})::text END || ${rest})`
  const tail = suffix === "" ? "" : ` || '${suffix}'`
  // The common case first: a finite value of years 1–9999 (±infinity is outside the range) skips the other tests.
  return (
    `CASE WHEN ${ref} >= '0001-01-01' AND ${ref} < '10000-01-01' THEN ${ref}::text ` +
    `WHEN NOT isfinite(${ref}) THEN ${refuse(ref, name, "value", NO_INFINITY)} ` +
    (latest === undefined
      ? ""
      : `WHEN ${ref} > '${latest}' THEN ${refuse(ref, name, "timestamp", "is beyond 64-bit microseconds since 1970")} `) +
    `ELSE ${expanded}${tail} END`
  )
}

// The last instant of 64-bit microseconds since 1970 (the typed path's limit).
const LATEST = "294247-01-10 04:00:54.775807"
const TIME_OF_DAY = '-MM-DD"T"HH24:MI:SS.US'

const oneDimensional = (ref: string, name: string, json: string): string =>
  `CASE WHEN array_ndims(${ref}) > 1 THEN ${refuse(ref, name, "multi-dimensional array", "has no list equivalent: unnest it in SQL or cast it to text")} ELSE ${json} END`

/** A column's expression in the COPY, and how the client rewrites the text it gives (csv-native-fix.ts). */
export interface CsvColumn {
  readonly sql: string
  readonly fix: CsvFix
}

const kept = (sql: string): CsvColumn => ({ sql, fix: "none" })

/** The expression writing a column of `type` (read as `ref`) in Rivet's CSV text, or `undefined` if there is none. */
export const csvExpression = (type: LogicalType, ref: string, name: string): CsvColumn | undefined => {
  switch (type.kind) {
    case "int16":
    case "int32":
    case "int64":
    case "string":
    case "uuid":
    case "json":
    case "interval":
      return kept(ref)
    case "decimal":
      return kept(`CASE WHEN ${ref} = 'NaN' THEN ${refuse(ref, name, "value", "has no decimal representation: filter it out or replace it in SQL, e.g. NULLIF(col, 'NaN')")} ELSE ${ref}::text END`)
    case "bool":
      return kept(`CASE ${ref} WHEN true THEN 'true' WHEN false THEN 'false' END`)
    case "bytes":
      return kept(`encode(${ref}, 'hex')`)
    case "float32":
    case "float64":
      return { sql: ref, fix: "float" }
    case "date":
      return kept(temporalText(ref, name, undefined, "", undefined))
    case "timestamp":
      return { sql: temporalText(ref, name, TIME_OF_DAY, "", LATEST), fix: "timestamp" }
    case "timestamptz":
      return { sql: temporalText(ref, name, TIME_OF_DAY, "Z", LATEST), fix: "timestamptz" }
    case "time":
      return { sql: ref, fix: "time" }
    case "list":
      switch (type.element.kind) {
        case "int16":
        case "int32":
        case "bool":
          return kept(oneDimensional(ref, name, `array_to_json(${ref})::text`))
        case "int64":
        case "string":
        case "uuid":
          return kept(oneDimensional(ref, name, `array_to_json(${ref}::text[])::text`))
        default:
          return undefined
      }
  }
}

/** The COPY statement of a rendered CSV export and, per column, the rewrite of its text on the client. */
export interface CsvCopy {
  readonly text: string
  readonly fixes: ReadonlyArray<CsvFix>
}

/**
 * `COPY (SELECT <expressions> FROM (<statement>) AS _rivet_csv(c1, c2, …)) TO STDOUT (FORMAT csv)`, or `undefined`
 * when some column has no expression. The columns are renamed by position, so duplicate names in the query do not
 * matter; the header is written by the format, not by COPY.
 */
export const csvCopyStatement = (statement: string, schema: BatchSchema): CsvCopy | undefined => {
  const columns: Array<CsvColumn> = []
  for (let c = 0; c < schema.columns.length; c++) {
    const column = schema.columns[c]!
    const expression = csvExpression(column.type, `_rivet_csv.c${c + 1}`, column.name)
    if (expression === undefined) return undefined
    columns.push(expression)
  }
  const names = schema.columns.map((_, c) => `c${c + 1}`).join(", ")
  const text = `COPY (SELECT ${columns.map((column) => column.sql).join(", ")} FROM (${statement}\n) AS _rivet_csv(${names})) TO STDOUT (FORMAT csv)`
  return { text, fixes: columns.map((column) => column.fix) }
}
