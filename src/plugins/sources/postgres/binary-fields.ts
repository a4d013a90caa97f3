import { formatLogicalType, type LogicalType } from "../../../core/batch.js"
import { DecodeFailure } from "./decode.js"
import type { ColumnPlan, Shape } from "./types.js"
import { bool, date, swapped, timestamp, toFloat64, uuid, widened } from "./binary-fixed.js"
import { interval } from "./binary-interval.js"
import { integerDecimal, numericDecimal, numericInt64 } from "./binary-numeric.js"
import { decodedText, list, passthrough } from "./binary-variable.js"
import type { FieldSink } from "./binary-wire.js"

export type { FieldSink } from "./binary-wire.js"

/**
 * Decoders of PostgreSQL's binary wire values (`COPY … (FORMAT binary)`, `typsend` output) straight into column
 * builders: integers and floats are byte-swapped into place, text is copied as bytes, numerics and intervals are
 * written as ASCII text — no JS string or object per value. The rules (and error messages) are those of the text
 * decoders in decode.ts: what the server's text rendering gave before, the binary path gives now. This module picks
 * the reader of each column: binary-fixed.ts, binary-variable.ts, binary-numeric.ts and binary-interval.ts hold them.
 */
/** How one result column is read from binary COPY. */
export interface FieldReader {
  /** The COPY's SELECT renders this column as text (PostgreSQL's output function) for `make`'s sink to read. */
  readonly rendered: boolean
  readonly make: (capacity: number) => FieldSink
}

// Types whose binary wire format is the text itself (textsend/bpcharsend/namesend/enum_send).
const TEXT_WIRE = new Set([25, 1042, 1043, 19])
const JSON_OID = 114
const JSONB_OID = 3802

type Scalar = Extract<Shape, { kind: "scalar" }>

/** The binary reader of a scalar for `target`, or undefined when the value must be rendered as text by the SQL. */
const scalarReader = (shape: Scalar, target: LogicalType): ((capacity: number) => FieldSink) | undefined => {
  const oid = shape.oid
  switch (target.kind) {
    case "string":
      return TEXT_WIRE.has(oid) || shape.isEnum ? passthrough(0, shape.name) : undefined
    case "json":
      return oid === JSON_OID ? passthrough(0, "json") : oid === JSONB_OID ? passthrough(1, "jsonb") : undefined
    case "bytes":
      return oid === 17 ? passthrough(0, "bytea") : undefined
    case "int16":
      return oid === 21 ? swapped("int16", "int2") : undefined
    case "int32":
      return oid === 23 ? swapped("int32", "int4") : oid === 21 ? widened("int32", 2, false, "int2") : undefined
    case "int64":
      if (oid === 20) return swapped("int64", "int8")
      if (oid === 23) return widened("int64", 4, false, "int4")
      if (oid === 21) return widened("int64", 2, false, "int2")
      if (oid === 26) return widened("int64", 4, true, "oid")
      return oid === 1700 ? numericInt64 : undefined
    case "float32":
      return oid === 700 ? swapped("float32", "float4") : undefined
    case "float64":
      if (oid === 701) return swapped("float64", "float8")
      return oid === 700 ? toFloat64("float4") : oid === 23 ? toFloat64("int4") : oid === 21 ? toFloat64("int2") : undefined
    case "decimal":
      if (oid === 1700) return numericDecimal(target.precision, target.scale)
      if (oid === 21 || oid === 23 || oid === 20) {
        return integerDecimal(oid === 21 ? 2 : oid === 23 ? 4 : 8, target.precision, target.scale)
      }
      return undefined
    case "bool":
      return oid === 16 ? bool : undefined
    case "date":
      return oid === 1082 ? date : undefined
    case "time":
      return oid === 1083 ? swapped("int64", "time") : undefined
    case "timestamp":
    case "timestamptz":
      return oid === 1114 || oid === 1184 ? timestamp : undefined
    case "uuid":
      return oid === 2950 ? uuid : undefined
    case "interval":
      return oid === 1186 ? interval : undefined
    case "list":
      return undefined
  }
}

const binaryReader = (shape: Shape, target: LogicalType): ((capacity: number) => FieldSink) | undefined => {
  if (shape.kind === "scalar") return scalarReader(shape, target)
  if (shape.kind === "array" && target.kind === "list") {
    const element = binaryReader(shape.element, target.element)
    return element === undefined ? undefined : list(element)
  }
  return undefined
}

/**
 * How a planned column is read from binary COPY: straight from its wire format when it has one here; otherwise the
 * SELECT renders it with PostgreSQL's output function (exactly today's text) and its bytes are taken as they are
 * (`string`) or through the plan's text decoder (arrays of such elements).
 */
export const fieldReader = (plan: ColumnPlan): FieldReader => {
  const binary = binaryReader(plan.shape, plan.type)
  if (binary !== undefined) return { rendered: false, make: binary }
  if (plan.type.kind === "string" && plan.decode === undefined) return { rendered: true, make: passthrough(0, "text") }
  return { rendered: true, make: decodedText(plan) }
}

/** `column "x" (numeric(12,2) → decimal(12,2)): …` — the failure of one value, as decode.ts callers word it. */
export const columnFailure = (plan: ColumnPlan, cause: unknown): DecodeFailure => {
  const reason = cause instanceof DecodeFailure ? cause.message : cause instanceof Error ? cause.message : String(cause)
  return new DecodeFailure(
    `column "${plan.name}" (${plan.sourceType} → ${formatLogicalType(plan.type)}): ${reason}`,
    cause instanceof DecodeFailure ? cause.hint : undefined
  )
}
