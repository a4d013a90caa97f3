import {
  DuckDBBlobValue,
  DuckDBDateValue,
  DuckDBDecimalValue,
  DuckDBInstance,
  DuckDBListValue,
  DuckDBTimestampTZValue,
  DuckDBTimestampValue,
  DuckDBTimeValue,
  DuckDBUUIDValue,
  type DuckDBValue
} from "@duckdb/node-api"
import * as Arrow from "apache-arrow"
import type { SchemaElement } from "hyparquet"
import type { LogicalType, Value } from "../../../../src/core/batch.js"

/** DuckDB's values as Rivet values: days, µs and scaled decimals taken exactly from DuckDB's own value classes. */
const fromDuckDB = (value: DuckDBValue): unknown => {
  if (value instanceof DuckDBDecimalValue || value instanceof DuckDBUUIDValue) return value.toString()
  if (value instanceof DuckDBDateValue) return value.days
  if (value instanceof DuckDBTimeValue || value instanceof DuckDBTimestampValue || value instanceof DuckDBTimestampTZValue) {
    return value.micros
  }
  if (value instanceof DuckDBBlobValue) return Uint8Array.from(value.bytes)
  if (value instanceof DuckDBListValue) return value.items.map(fromDuckDB)
  return value
}

/** DuckDB (the reader most users point at an export): each column's type as DESCRIBE says, and the rows. */
export const readWithDuckDB = async (path: string) => {
  const instance = await DuckDBInstance.create(":memory:")
  const connection = await instance.connect()
  try {
    const file = `'${path.replaceAll("'", "''")}'`
    const described = await connection.runAndReadAll(`DESCRIBE SELECT * FROM read_parquet(${file})`)
    const types = Object.fromEntries(described.getRowsJson().map((row) => [String(row[0]), String(row[1])]))
    const result = await connection.runAndReadAll(`SELECT * FROM read_parquet(${file})`)
    const rows = result.getRowObjects().map((row) => Object.fromEntries(Object.entries(row).map(([k, v]) => [k, fromDuckDB(v)])))
    return { types, rows }
  } finally {
    connection.closeSync()
    instance.closeSync()
  }
}

const utf8 = new TextDecoder()

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")
const uuidText = (bytes: Uint8Array): string => {
  const h = hex(bytes)
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

const decimalText = (words: Uint32Array, scale: number): string => {
  let unsigned = 0n
  for (let w = words.length - 1; w >= 0; w--) unsigned = (unsigned << 32n) | BigInt(words[w]!)
  const value = BigInt.asIntN(words.length * 32, unsigned)
  const digits = (value < 0n ? -value : value).toString().padStart(scale + 1, "0")
  return `${value < 0n ? "-" : ""}${digits.slice(0, digits.length - scale)}${scale > 0 ? `.${digits.slice(-scale)}` : ""}`
}

/**
 * Arrow data back to Rivet values from the raw buffers (apache-arrow's `get` turns timestamps into float
 * milliseconds). A slice's value buffers start at its first row; bit-packed buffers are indexed with `offset`.
 */
const decodeArrow = (data: Arrow.Data, type: LogicalType): Array<Value> => {
  const children = type.kind === "list" ? decodeArrow(data.children[0]!, type.element) : []
  const values = data.values as ArrayLike<number | bigint> & { subarray: (a: number, b: number) => Uint8Array & Uint32Array }
  const offsets = data.valueOffsets as Int32Array
  return Array.from({ length: data.length }, (_, i): Value => {
    if (!data.getValid(i)) return null
    switch (type.kind) {
      case "bool":
        return ((Number(values[(data.offset + i) >> 3]) >> ((data.offset + i) & 7)) & 1) === 1
      case "decimal": {
        const stride = type.precision <= 38 ? 4 : 8
        return decimalText(values.subarray(i * stride, (i + 1) * stride), type.scale)
      }
      case "uuid":
        return uuidText(values.subarray(i * 16, (i + 1) * 16))
      case "string":
      case "json":
      case "interval":
        return utf8.decode(values.subarray(offsets[i]!, offsets[i + 1]!))
      case "bytes":
        return Uint8Array.from(values.subarray(offsets[i]!, offsets[i + 1]!))
      case "list":
        return children.slice(offsets[i]!, offsets[i + 1]!)
      default:
        return values[i]! as Value
    }
  })
}

const arrowTypeName = (field: Arrow.Field): string => {
  const extension = field.metadata.get("ARROW:extension:name")
  const inner = field.type instanceof Arrow.List ? `List<${arrowTypeName(field.type.children[0]!)}>` : String(field.type)
  return extension === undefined ? inner : `${inner} ${extension}`
}

/** arrow-rs through parquet-wasm (the Parquet reader of Polars/DataFusion-class tools): Arrow types and rows. */
export const readWithArrowRs = async (file: Uint8Array, columns: ReadonlyArray<{ name: string; type: LogicalType }>) => {
  const wasm = await import("parquet-wasm")
  const table = Arrow.tableFromIPC(wasm.readParquet(file).intoIPCStream())
  const types = Object.fromEntries(table.schema.fields.map((field) => [field.name, arrowTypeName(field)]))
  const byColumn = columns.map(({ name, type }) => table.getChild(name)!.data.flatMap((data) => decodeArrow(data, type)))
  const rows = Array.from({ length: table.numRows }, (_, r) => Object.fromEntries(columns.map(({ name }, c) => [name, byColumn[c]![r]])))
  return { types, rows }
}

const annotation = (element: SchemaElement): string | undefined => {
  const logical = element.logical_type
  if (logical === undefined) return element.converted_type
  switch (logical.type) {
    case "INTEGER":
      return `INTEGER(${logical.bitWidth}, ${logical.isSigned ? "signed" : "unsigned"})`
    case "DECIMAL":
      return `DECIMAL(${logical.precision},${logical.scale})`
    case "TIME":
    case "TIMESTAMP":
      return `${logical.type}(${logical.unit}, ${logical.isAdjustedToUTC ? "UTC" : "local"})`
    default:
      return logical.type
  }
}

/** hyparquet's view of each top-level column: its leaf's physical type and annotation, lists as LIST<…>. */
export const hyparquetTypes = (schema: ReadonlyArray<SchemaElement>): Record<string, string> => {
  let index = 1
  const node = (): string => {
    const element = schema[index++]!
    if (element.converted_type === "LIST") {
      index++ // the repeated group
      return `LIST<${node()}>`
    }
    const note = annotation(element)
    return note === undefined ? String(element.type) : `${element.type} / ${note}`
  }
  const types: Record<string, string> = {}
  while (index < schema.length) {
    const name = schema[index]!.name
    types[name] = node()
  }
  return types
}
