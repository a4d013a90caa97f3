import { Binary, Bool, DateDay, Decimal, Field, Float32, Float64, Int16, Int32, Int64, List, Schema, TimeMicrosecond, TimestampMicrosecond, Utf8, type DataType } from "apache-arrow"
import { formatLogicalType, type BatchSchema, type LogicalType } from "rivet-export/plugin"

/** Decimal256 holds 76 digits; Decimal128 (38 digits) is used whenever it is enough, as most readers expect. */
export const MAX_DECIMAL_PRECISION = 76

/** Field metadata key recording Rivet's logical type, so `json`, `uuid` and `interval` text stays recognisable. */
export const LOGICAL_TYPE_KEY = "rivet:logical_type"

/** Why a logical type cannot be written to Arrow, or undefined when it can. */
export const typeProblem = (type: LogicalType): string | undefined => {
  if (type.kind === "list") return typeProblem(type.element)
  if (type.kind !== "decimal") return undefined
  const { precision, scale } = type
  if (!Number.isInteger(precision) || precision < 1 || precision > MAX_DECIMAL_PRECISION) {
    return `${formatLogicalType(type)} has a precision outside 1–${MAX_DECIMAL_PRECISION} (Arrow's Decimal256 limit)`
  }
  if (!Number.isInteger(scale) || scale < 0 || scale > precision) {
    return `${formatLogicalType(type)} has a scale outside 0–${precision}`
  }
  return undefined
}

export const decimalBitWidth = (precision: number): 128 | 256 => (precision <= 38 ? 128 : 256)

/**
 * Rivet logical type → Arrow type. Text-like types with no Arrow equivalent that every reader loads (uuid, json,
 * interval) are Utf8; the field metadata keeps the logical type.
 */
export const arrowType = (type: LogicalType): DataType => {
  switch (type.kind) {
    case "int16":
      return new Int16()
    case "int32":
      return new Int32()
    case "int64":
      return new Int64()
    case "float32":
      return new Float32()
    case "float64":
      return new Float64()
    case "decimal":
      return new Decimal(type.scale, type.precision, decimalBitWidth(type.precision))
    case "bool":
      return new Bool()
    case "date":
      return new DateDay()
    case "time":
      return new TimeMicrosecond()
    case "timestamp":
      return new TimestampMicrosecond()
    case "timestamptz":
      return new TimestampMicrosecond("UTC")
    case "bytes":
      return new Binary()
    case "list":
      return new List(new Field("item", arrowType(type.element), true))
    case "string":
    case "uuid":
    case "json":
    case "interval":
      return new Utf8()
  }
}

/** The Arrow schema of a Rivet batch schema: every field nullable, tagged with its Rivet logical type. */
export const arrowSchema = (schema: BatchSchema): Schema =>
  new Schema(
    schema.columns.map(
      (column) =>
        new Field(column.name, arrowType(column.type), true, new Map([[LOGICAL_TYPE_KEY, formatLogicalType(column.type)]]))
    )
  )
