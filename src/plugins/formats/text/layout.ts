import { type Batch, type BatchSchema, formatLogicalType, type LogicalType } from "../../../core/batch.js"
import type { ColumnData, Layout } from "../../../core/columns/data.js"

/** Whether a batch's column data fits its schema, checked once per batch before the text encoders read it. */

/** The layout each logical type's column data must have (see `ColumnData`). */
const LAYOUT: Record<LogicalType["kind"], Layout> = {
  int16: "int16",
  int32: "int32",
  date: "int32",
  int64: "int64",
  time: "int64",
  timestamp: "int64",
  timestamptz: "int64",
  float32: "float32",
  float64: "float64",
  bool: "bool",
  uuid: "fixed",
  string: "binary",
  json: "binary",
  decimal: "binary",
  interval: "binary",
  bytes: "binary",
  list: "list"
}

/** Why a column's data cannot hold values of `type` (its layout, its length), or `undefined` when it can. */
export const layoutMismatch = (type: LogicalType, column: ColumnData, rows: number): string | undefined => {
  const expected = LAYOUT[type.kind]
  if (column.layout !== expected) return `its data has the ${column.layout} layout, expected ${expected}`
  if (column.length !== rows) return `it holds ${column.length} values for ${rows} rows`
  if (column.layout === "fixed" && column.width !== 16) return `its values are ${column.width} bytes wide, expected 16`
  if (column.layout === "list" && type.kind === "list") {
    const childRows = column.offsets[column.length] ?? 0
    const child = layoutMismatch(type.element, column.child, childRows)
    return child && `its list elements do not fit: ${child}`
  }
  return undefined
}

/** The first column of a batch whose data does not fit the schema, as a message, or `undefined`. */
export const batchMismatch = (
  schema: BatchSchema,
  columns: ReadonlyArray<ColumnData>,
  rows: number
): string | undefined => {
  for (let c = 0; c < schema.columns.length; c++) {
    const column = schema.columns[c]!
    const problem = layoutMismatch(column.type, columns[c]!, rows)
    if (problem) return `column "${column.name}" (${formatLogicalType(column.type)}) does not fit its type: ${problem}`
  }
  return undefined
}

/** Why `batch` cannot be written to a part opened for `schema` (its column count, then its columns' data), or `undefined`. */
export const batchProblem = (schema: BatchSchema, batch: Batch): { readonly message: string; readonly hint?: string } | undefined => {
  if (batch.columns.length !== schema.columns.length)
    return { message: `a batch has ${batch.columns.length} columns but the part was opened with ${schema.columns.length}` }
  const mismatch = batchMismatch(schema, batch.columns, batch.rowCount)
  return mismatch === undefined ? undefined : { message: mismatch, hint: "the source or transform built a batch that does not match its schema" }
}
