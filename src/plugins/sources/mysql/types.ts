import { formatLogicalType, type LogicalType } from "../../../core/batch.js"
import { quoteIdent } from "./statement.js"

/** What mysql2 reports for a result column (its `FieldPacket`), the parts we read. */
export interface FieldInfo {
  readonly name: string
  readonly columnType: number
  readonly flags: number
  readonly characterSet: number
  readonly columnLength: number
  readonly decimals: number
}

/** How a column's text-protocol bytes become buffer values (decode.ts). */
export type DecodeKind =
  | "int16"
  | "int32"
  | "int64"
  | "bool"
  | "float32"
  | "float64"
  | "text"
  | "date"
  | "timestamp"
  | "timestamptz"
  | "time"

export interface ColumnPlan {
  readonly name: string
  readonly type: LogicalType
  readonly sourceType: string
  readonly decode: DecodeKind
  /** A date-like column, where a zero date (`0000-00-00`, a zero month or day) may appear. */
  readonly dateLike: boolean
}

/** Why a column cannot be exported as it is, and the fix. */
export interface Problem {
  readonly reason: string
  readonly fix: string
}

const UNSIGNED = 32
const BINARY_CHARSET = 63
const ENUM = 256
const SET = 2048

/** Column type numbers of the MySQL protocol (include/field_types.h). */
const T = {
  DECIMAL: 0, TINY: 1, SHORT: 2, LONG: 3, FLOAT: 4, DOUBLE: 5, NULL: 6, TIMESTAMP: 7, LONGLONG: 8, INT24: 9,
  DATE: 10, TIME: 11, DATETIME: 12, YEAR: 13, NEWDATE: 14, VARCHAR: 15, BIT: 16, JSON: 245, NEWDECIMAL: 246,
  ENUM: 247, SET: 248, TINY_BLOB: 249, MEDIUM_BLOB: 250, LONG_BLOB: 251, BLOB: 252, VAR_STRING: 253, STRING: 254,
  GEOMETRY: 255
} as const

interface Mapping {
  readonly type: LogicalType
  readonly decode: DecodeKind
  readonly sourceType: string
}

const of = (type: LogicalType, decode: DecodeKind, sourceType: string): Mapping => ({ type, decode, sourceType })

const INTEGER_NAMES: Record<number, string> = { 1: "tinyint", 2: "smallint", 9: "mediumint", 3: "int", 8: "bigint" }

/** decimal(p,s) from the display length: digits, plus one for the point when s > 0, plus one for a sign. */
const decimalOf = (field: FieldInfo): { precision: number; scale: number } => {
  const scale = field.decimals
  const signed = (field.flags & UNSIGNED) === 0
  const precision = field.columnLength - (scale > 0 ? 1 : 0) - (signed ? 1 : 0)
  return { precision: Math.max(precision, scale, 1), scale }
}

const fraction = (field: FieldInfo): string => (field.decimals > 0 && field.decimals <= 6 ? `(${field.decimals})` : "")

/** The default mapping of a column (docs/sources/mysql.md has the table), or why there is none. */
const defaultMapping = (field: FieldInfo, json: boolean): Mapping | Problem => {
  const unsigned = (field.flags & UNSIGNED) !== 0
  const binary = field.characterSet === BINARY_CHARSET
  const integer = INTEGER_NAMES[field.columnType]
  if (integer !== undefined) {
    const name = `${integer}${unsigned ? " unsigned" : ""}`
    switch (field.columnType) {
      case T.TINY:
        return of({ kind: "int16" }, "int16", name)
      case T.SHORT:
        return unsigned ? of({ kind: "int32" }, "int32", name) : of({ kind: "int16" }, "int16", name)
      case T.INT24:
        return of({ kind: "int32" }, "int32", name)
      case T.LONG:
        return unsigned ? of({ kind: "int64" }, "int64", name) : of({ kind: "int32" }, "int32", name)
      default:
        // bigint unsigned reaches 2^64 - 1, beyond int64: exact as decimal(20,0).
        return unsigned ? of({ kind: "decimal", precision: 20, scale: 0 }, "text", name) : of({ kind: "int64" }, "int64", name)
    }
  }
  switch (field.columnType) {
    case T.DECIMAL:
    case T.NEWDECIMAL: {
      const { precision, scale } = decimalOf(field)
      return of({ kind: "decimal", precision, scale }, "text", `decimal(${precision},${scale})${unsigned ? " unsigned" : ""}`)
    }
    case T.FLOAT:
      return of({ kind: "float32" }, "float32", "float")
    case T.DOUBLE:
      return of({ kind: "float64" }, "float64", "double")
    case T.YEAR:
      return of({ kind: "int16" }, "int16", "year")
    case T.BIT:
      return of({ kind: "bytes" }, "text", `bit(${field.columnLength})`)
    case T.DATE:
    case T.NEWDATE:
      return of({ kind: "date" }, "date", "date")
    case T.DATETIME:
      return of({ kind: "timestamp" }, "timestamp", `datetime${fraction(field)}`)
    case T.TIMESTAMP:
      return of({ kind: "timestamptz" }, "timestamptz", `timestamp${fraction(field)}`)
    case T.TIME:
      return of({ kind: "interval" }, "time", `time${fraction(field)}`)
    case T.JSON:
      return of({ kind: "json" }, "text", "json")
    case T.NULL:
      return of({ kind: "string" }, "text", "null")
    case T.GEOMETRY:
      return {
        reason: "geometry columns have no lossless logical type here",
        fix: `select it as text or bytes in a query: ST_AsText(${quoteIdent(field.name)}) (WKT) or ST_AsBinary(${quoteIdent(field.name)}) (WKB); or export MySQL's stored form (4-byte SRID + WKB) with columns: { ${field.name}: { type: bytes } }`
      }
    case T.ENUM:
    case T.SET:
      return of({ kind: "string" }, "text", field.columnType === T.ENUM ? "enum" : "set")
    case T.VARCHAR:
    case T.VAR_STRING:
    case T.STRING:
    case T.TINY_BLOB:
    case T.MEDIUM_BLOB:
    case T.LONG_BLOB:
    case T.BLOB: {
      if ((field.flags & ENUM) !== 0) return of({ kind: "string" }, "text", "enum")
      if ((field.flags & SET) !== 0) return of({ kind: "string" }, "text", "set")
      const blob = field.columnType >= T.TINY_BLOB && field.columnType <= T.BLOB
      if (binary) return of({ kind: "bytes" }, "text", blob ? "blob" : field.columnType === T.STRING ? "binary" : "varbinary")
      if (json) return of({ kind: "json" }, "text", "json")
      return of({ kind: "string" }, "text", blob ? "text" : field.columnType === T.STRING ? "char" : "varchar")
    }
    default:
      return {
        reason: `MySQL column type ${field.columnType} is not supported`,
        fix: `cast it in the query, e.g. CAST(${quoteIdent(field.name)} AS CHAR)`
      }
  }
}

const isNumeric = (mapping: Mapping): boolean =>
  ["int16", "int32", "int64", "decimal"].includes(mapping.type.kind) && mapping.sourceType !== "year"

/** `columns:` overrides a MySQL column accepts: string (text columns and numbers), bool and decimal (numbers), json (text). */
const overrideMapping = (mapping: Mapping, target: LogicalType, column: string): Mapping | Problem => {
  const refuse = (): Problem => ({
    reason: `the override ${formatLogicalType(target)} does not fit MySQL type ${mapping.sourceType}`,
    fix: `supported overrides: string (any non-binary column), bool and decimal(p,s) (integer and decimal columns), json (text columns); or cast ${column} in the query`
  })
  if (formatLogicalType(target) === formatLogicalType(mapping.type)) return mapping
  switch (target.kind) {
    case "string":
      return mapping.type.kind === "bytes" ? refuse() : { ...mapping, type: target, decode: "text" }
    case "json":
      return mapping.type.kind === "string" ? { ...mapping, type: target, decode: "text" } : refuse()
    case "bool":
      return isNumeric(mapping) && mapping.type.kind !== "decimal" ? { ...mapping, type: target, decode: "bool" } : refuse()
    case "decimal":
      if (!(target.scale >= 0 && target.scale <= target.precision)) {
        return { reason: `the override ${formatLogicalType(target)} is not a valid decimal`, fix: "use 0 <= scale <= precision" }
      }
      return isNumeric(mapping) ? { ...mapping, type: target, decode: "text" } : refuse()
    default:
      return refuse()
  }
}

const isProblem = (value: Mapping | Problem): value is Problem => "reason" in value

/** The plan of one column — its default mapping, or the override's — or the problem to report. */
export const planColumn = (
  field: FieldInfo,
  json: boolean,
  override: LogicalType | undefined
): { readonly plan: ColumnPlan } | { readonly problem: Problem } => {
  const mapping = defaultMapping(field, json)
  if (field.columnType === T.GEOMETRY && override?.kind === "bytes") {
    return { plan: { name: field.name, type: override, sourceType: "geometry", decode: "text", dateLike: false } }
  }
  if (isProblem(mapping)) return { problem: mapping }
  const planned = override === undefined ? mapping : overrideMapping(mapping, override, field.name)
  if (isProblem(planned)) return { problem: planned }
  const dateLike = mapping.decode === "date" || mapping.decode === "timestamp" || mapping.decode === "timestamptz"
  return { plan: { name: field.name, type: planned.type, sourceType: planned.sourceType, decode: planned.decode, dateLike } }
}
