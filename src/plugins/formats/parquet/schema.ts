import type { SchemaElement } from "./writer/metadata.js"
import { type BatchSchema, type FieldIds, formatLogicalType, type LogicalType } from "../../../core/batch.js"

/** Arrow's Decimal256 holds 76 digits; wider decimals would be written but most readers could not load them. */
export const MAX_DECIMAL_PRECISION = 76

/** A column the format cannot encode, with what to do about it. */
export interface SchemaProblem {
  readonly column: string
  readonly message: string
  readonly hint: string
}

type DecimalType = Extract<LogicalType, { kind: "decimal" }>

/** Bytes of a FIXED_LEN_BYTE_ARRAY decimal: the fewest that hold every unscaled value of `precision` digits. */
export const decimalByteLength = (precision: number): number => {
  const limit = 10n ** BigInt(precision)
  let bytes = 1
  while (1n << BigInt(bytes * 8 - 1) < limit) bytes++
  return bytes
}

const decimalProblem = (type: DecimalType): string | undefined => {
  const { precision, scale } = type
  if (!Number.isInteger(precision) || precision < 1 || precision > MAX_DECIMAL_PRECISION) {
    return `${formatLogicalType(type)} has a precision outside 1–${MAX_DECIMAL_PRECISION}`
  }
  if (!Number.isInteger(scale) || scale < 0 || scale > precision) {
    return `${formatLogicalType(type)} has a scale outside 0–${precision} (Parquet decimals need 0 ≤ scale ≤ precision)`
  }
  return undefined
}

const typeProblem = (type: LogicalType): string | undefined =>
  type.kind === "decimal" ? decimalProblem(type) : type.kind === "list" ? typeProblem(type.element) : undefined

/** Every reason `schema` cannot be written as Parquet (empty when it can). */
export const schemaProblems = (schema: BatchSchema): ReadonlyArray<SchemaProblem> => {
  const problems: Array<SchemaProblem> = []
  if (schema.columns.length === 0) {
    problems.push({
      column: "(none)",
      message: "the result has no columns; a Parquet file needs at least one",
      hint: "select at least one column in the export's query"
    })
  }
  const seen = new Set<string>()
  for (const column of schema.columns) {
    if (column.name === "") {
      problems.push({ column: column.name, message: "a column has an empty name", hint: "alias it in the query: SELECT expr AS name" })
    } else if (seen.has(column.name)) {
      problems.push({
        column: column.name,
        message: `column name "${column.name}" appears more than once`,
        hint: "give each column a distinct alias in the query"
      })
    }
    seen.add(column.name)
    const problem = typeProblem(column.type)
    if (problem !== undefined) {
      problems.push({
        column: column.name,
        message: `column "${column.name}": ${problem}`,
        hint: `override its type in the export's columns: block (e.g. ${column.name}: { type: decimal(38,10) } or { type: string }), cast it in the query, or use format: csv`
      })
    }
  }
  return problems
}

const OPTIONAL = "OPTIONAL" as const

const decimalElement = (name: string, { precision, scale }: DecimalType): SchemaElement => {
  const annotation = {
    repetition_type: OPTIONAL,
    converted_type: "DECIMAL",
    logical_type: { type: "DECIMAL", precision, scale },
    precision,
    scale
  } as const
  if (precision <= 9) return { name, type: "INT32", ...annotation }
  if (precision <= 18) return { name, type: "INT64", ...annotation }
  return { name, type: "FIXED_LEN_BYTE_ARRAY", type_length: decimalByteLength(precision), ...annotation }
}

/**
 * The schema elements of one column, in Parquet's depth-first order (a list is a group of three levels), the
 * column's field id on its outer element and a list element's on the element.
 */
export const columnElements = (name: string, type: LogicalType, fieldIds?: FieldIds): Array<SchemaElement> => {
  const elements = typedElements(name, type, fieldIds?.element)
  const [outer, ...rest] = elements
  return fieldIds === undefined ? elements : [{ ...outer!, field_id: fieldIds.id }, ...rest]
}

const typedElements = (name: string, type: LogicalType, elementIds: FieldIds | undefined): Array<SchemaElement> => {
  switch (type.kind) {
    // Readers that know only converted types, and those that know only logical types, both see a 16-bit integer.
    case "int16":
      return [{
        name,
        type: "INT32",
        repetition_type: OPTIONAL,
        converted_type: "INT_16",
        logical_type: { type: "INTEGER", bitWidth: 16, isSigned: true }
      }]
    case "int32":
      return [{ name, type: "INT32", repetition_type: OPTIONAL }]
    case "int64":
      return [{ name, type: "INT64", repetition_type: OPTIONAL }]
    case "float32":
      return [{ name, type: "FLOAT", repetition_type: OPTIONAL }]
    case "float64":
      return [{ name, type: "DOUBLE", repetition_type: OPTIONAL }]
    case "decimal":
      return [decimalElement(name, type)]
    case "string":
    case "interval":
      return [{ name, type: "BYTE_ARRAY", repetition_type: OPTIONAL, converted_type: "UTF8", logical_type: { type: "STRING" } }]
    case "bool":
      return [{ name, type: "BOOLEAN", repetition_type: OPTIONAL }]
    case "date":
      return [{ name, type: "INT32", repetition_type: OPTIONAL, converted_type: "DATE", logical_type: { type: "DATE" } }]
    // TIME_MICROS / TIMESTAMP_MICROS converted types mean "adjusted to UTC", so local times carry only the logical type.
    case "time":
      return [{
        name,
        type: "INT64",
        repetition_type: OPTIONAL,
        logical_type: { type: "TIME", isAdjustedToUTC: false, unit: "MICROS" }
      }]
    case "timestamp":
      return [{
        name,
        type: "INT64",
        repetition_type: OPTIONAL,
        logical_type: { type: "TIMESTAMP", isAdjustedToUTC: false, unit: "MICROS" }
      }]
    case "timestamptz":
      return [{
        name,
        type: "INT64",
        repetition_type: OPTIONAL,
        converted_type: "TIMESTAMP_MICROS",
        logical_type: { type: "TIMESTAMP", isAdjustedToUTC: true, unit: "MICROS" }
      }]
    case "uuid":
      return [{ name, type: "FIXED_LEN_BYTE_ARRAY", type_length: 16, repetition_type: OPTIONAL, logical_type: { type: "UUID" } }]
    // DuckDB reads a JSON column as JSON only with the converted type; the logical type alone gives a BLOB.
    case "json":
      return [{ name, type: "BYTE_ARRAY", repetition_type: OPTIONAL, converted_type: "JSON", logical_type: { type: "JSON" } }]
    case "bytes":
      return [{ name, type: "BYTE_ARRAY", repetition_type: OPTIONAL }]
    case "list":
      return [
        { name, repetition_type: OPTIONAL, num_children: 1, converted_type: "LIST", logical_type: { type: "LIST" } },
        { name: "list", repetition_type: "REPEATED", num_children: 1 },
        ...columnElements("element", type.element, elementIds)
      ]
  }
}

/** The Parquet schema (root first) of a batch schema; call only after `schemaProblems` came back empty. */
export const parquetSchema = (schema: BatchSchema): Array<SchemaElement> => [
  { name: "root", num_children: schema.columns.length },
  ...schema.columns.flatMap((column) => columnElements(column.name, column.type, column.fieldIds))
]
