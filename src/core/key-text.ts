import type { LogicalType, Value } from "./batch.js"
import { renderDate, renderTime, renderTimestamp, renderTimestamptz } from "./temporal-text.js"

/** Logical types that can order rows: usable as an incremental cursor, a keyset key or a window column. */
const ORDERABLE = new Set<LogicalType["kind"]>([
  "int16",
  "int32",
  "int64",
  "float32",
  "float64",
  "decimal",
  "string",
  "date",
  "time",
  "timestamp",
  "timestamptz",
  "uuid"
])

export const isOrderable = (type: LogicalType): boolean => ORDERABLE.has(type.kind)

/** Types whose values are instants, for `cursor_lag` and `time_window`. */
export const isTemporal = (type: LogicalType): boolean =>
  type.kind === "timestamp" || type.kind === "timestamptz" || type.kind === "date"

/**
 * A batch value as text in a SQL source's input syntax — what a `RowFilter` carries and what state stores as a
 * cursor. Exact for every orderable type (timestamps keep their microseconds). Undefined for NULL and for types
 * that cannot order rows.
 */
export const keyText = (type: LogicalType, value: Value): string | undefined => {
  if (value === null) return undefined
  switch (type.kind) {
    case "int16":
    case "int32":
    case "int64":
    case "float32":
    case "float64":
      return String(value)
    case "decimal":
    case "string":
    case "uuid":
      return value as string
    case "date":
      return sqlYears(renderDate(value as number))
    case "time":
      return renderTime(value as bigint)
    case "timestamp":
      return sqlYears(renderTimestamp(value as bigint))
    case "timestamptz":
      return sqlYears(renderTimestamptz(value as bigint))
    default:
      return undefined
  }
}

/**
 * Dates outside years 1–9999 in SQL input syntax: the ISO 8601 expanded form (`+10000-…`, `-0001-…`, with year 0 =
 * 1 BC) that the text formats write is refused by PostgreSQL, which reads `10000-…` and `0002-… BC` instead.
 */
const sqlYears = (text: string): string => {
  const match = /^([+-]?)(\d{4,})(-.*)$/.exec(text)
  if (match === null) return text
  const year = Number(match[2]) * (match[1] === "-" ? -1 : 1)
  return year >= 1 ? `${String(year).padStart(4, "0")}${match[3]}` : `${String(1 - year).padStart(4, "0")}${match[3]} BC`
}

/** An instant as text for a column of `type`: `2026-12-02T10:00:00.000000Z`, or the date for date columns. */
export const instantText = (type: LogicalType, at: Date): string => {
  const micros = BigInt(at.getTime()) * 1000n
  if (type.kind === "date") return renderDate(Math.floor(at.getTime() / 86_400_000))
  // Naive timestamps are compared in UTC (the source session's time zone).
  return type.kind === "timestamp" ? renderTimestamp(micros) : renderTimestamptz(micros)
}
