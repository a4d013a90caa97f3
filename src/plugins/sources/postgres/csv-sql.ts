import type { BatchSchema, LogicalType } from "../../../core/batch.js"
import { quoteLiteral } from "./statement.js"

/**
 * SQL that makes PostgreSQL write Rivet's CSV itself (`COPY (…) TO STDOUT (FORMAT csv)`): one expression per column
 * giving exactly the text the CSV format writes for the value (docs/formats/csv.md), NULL staying NULL — COPY then
 * quotes fields as RFC 4180 needs, an empty string as `""` and NULL as an empty field, the same rules as ours.
 * The session runs with TimeZone UTC, IntervalStyle iso_8601 and shortest float output (session.ts).
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
 * JavaScript's spelling of a float from PostgreSQL's shortest round-trip text: the same digits, but JavaScript
 * writes fixed notation for exponents −7 < e < 21 (PostgreSQL switches to `1e-05`/`1e+15` earlier) and no
 * leading zero in an exponent (`1e-7`, not `1e-07`). `NaN`, `Infinity`, `-Infinity` and `-0` are spelled alike.
 *
 * PostgreSQL writes fixed notation exactly for magnitudes in [1e-4, `fixedBelow`) (1e15 for float8, 1e6 for float4):
 * those values — most of them in practice — take one cast and two comparisons instead of the text inspection.
 */
const floatText = (ref: string, fixedBelow: string): string => `CASE WHEN abs(${ref}) >= 1e-4 AND abs(${ref}) < ${fixedBelow} THEN ${ref}::text ELSE ${anyFloatText(ref)} END`

const anyFloatText = (ref: string): string => {
  const sign = "(CASE WHEN left(t, 1) = '-' THEN '-' ELSE '' END)"
  const digits = "replace(split_part(ltrim(t, '-'), 'e', 1), '.', '')"
  const exponent = "split_part(t, 'e', 2)::int"
  return (
    `CASE WHEN strpos(${ref}::text, 'e') = 0 THEN ${ref}::text ELSE (SELECT CASE ` +
    `WHEN e < -6 OR e > 20 THEN regexp_replace(t, 'e([+-])0*', 'e\\1') ` +
    `WHEN e < 0 THEN s || '0.' || repeat('0', -e - 1) || d ` +
    `WHEN length(d) <= e + 1 THEN s || d || repeat('0', e + 1 - length(d)) ` +
    `ELSE s || left(d, e + 1) || '.' || substr(d, e + 2) END ` +
    `FROM (SELECT t, ${sign} AS s, ${digits} AS d, ${exponent} AS e FROM (SELECT ${ref}::text AS t) AS _t) AS _f) END`
  )
}

/**
 * ISO 8601 dates and timestamps (`format`: the to_char pattern after the year), years 0000–9999 in four digits and
 * the others in expanded form (`+10000`, `-0001`; 1 BC is year 0000), as the typed path writes them.
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
    `CASE WHEN ${ref} >= '0001-01-01' AND ${ref} < '10000-01-01' THEN to_char(${ref}, 'YYYY${format ?? "-MM-DD"}')${tail} ` +
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

/** The expression writing a column of `type` (read as `ref`) in Rivet's CSV text, or `undefined` if there is none. */
export const csvExpression = (type: LogicalType, ref: string, name: string): string | undefined => {
  switch (type.kind) {
    case "int16":
    case "int32":
    case "int64":
    case "string":
    case "uuid":
    case "json":
    case "interval":
      return ref
    case "decimal":
      return `CASE WHEN ${ref} = 'NaN' THEN ${refuse(ref, name, "value", "has no decimal representation: filter it out or replace it in SQL, e.g. NULLIF(col, 'NaN')")} ELSE ${ref}::text END`
    case "bool":
      return `CASE ${ref} WHEN true THEN 'true' WHEN false THEN 'false' END`
    case "bytes":
      return `encode(${ref}, 'hex')`
    case "float32":
      return floatText(ref, "1e6")
    case "float64":
      return floatText(ref, "1e15")
    case "date":
      return temporalText(ref, name, undefined, "", undefined)
    case "timestamp":
      return temporalText(ref, name, TIME_OF_DAY, "", LATEST)
    case "timestamptz":
      return temporalText(ref, name, TIME_OF_DAY, "Z", LATEST)
    case "time":
      return `substr(${ref}::text, 1, 8) || '.' || rpad(substr(${ref}::text, 10), 6, '0')`
    case "list":
      switch (type.element.kind) {
        case "int16":
        case "int32":
        case "bool":
          return oneDimensional(ref, name, `array_to_json(${ref})::text`)
        case "int64":
        case "string":
        case "uuid":
          return oneDimensional(ref, name, `array_to_json(${ref}::text[])::text`)
        default:
          return undefined
      }
  }
}

/**
 * `COPY (SELECT <expressions> FROM (<statement>) AS _rivet_csv(c1, c2, …)) TO STDOUT (FORMAT csv)`, or `undefined`
 * when some column has no expression. The columns are renamed by position, so duplicate names in the query do not
 * matter; the header is written by the format, not by COPY.
 */
export const csvCopyStatement = (statement: string, schema: BatchSchema): string | undefined => {
  const expressions: Array<string> = []
  for (let c = 0; c < schema.columns.length; c++) {
    const column = schema.columns[c]!
    const expression = csvExpression(column.type, `_rivet_csv.c${c + 1}`, column.name)
    if (expression === undefined) return undefined
    expressions.push(expression)
  }
  const names = schema.columns.map((_, c) => `c${c + 1}`).join(", ")
  return `COPY (SELECT ${expressions.join(", ")} FROM (${statement}\n) AS _rivet_csv(${names})) TO STDOUT (FORMAT csv)`
}
