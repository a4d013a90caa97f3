import { type ColumnData, dataByteLength } from "./columns/data.js"
import type { LogicalType, Value } from "./columns/logical.js"
import { InvalidValue, valueAppender, valueAt } from "./columns/values.js"

export type { ColumnData } from "./columns/data.js"
export type { LogicalType, Value } from "./columns/logical.js"
export { columnValues, InvalidValue, shortestFloat32, valueAt } from "./columns/values.js"

/** One output column: its name and logical type. */
export interface Column {
  readonly name: string
  readonly type: LogicalType
  /** The source's own name for the type (e.g. `numeric(12,2)`), for reports and manifests. */
  readonly sourceType?: string
  /**
   * Ids a table format gives the column (Iceberg's field ids), which formats that can carry them write into their
   * schema (Parquet's `field_id`) so a reader tells a column by id across renames and added columns.
   */
  readonly fieldIds?: FieldIds | undefined
}

/** A column's field id, and for a list its element's ids. */
export interface FieldIds {
  readonly id: number
  readonly element?: FieldIds | undefined
}

/** The ordered columns of a result; every batch of the result carries it. */
export interface BatchSchema {
  readonly columns: ReadonlyArray<Column>
}

/**
 * The unit flowing through a pipeline: a slice of rows with its schema, stored column by column in the Arrow memory
 * layout (see `ColumnData`): typed arrays, UTF-8 bytes plus offsets, validity bitmaps — no JS value per cell. `batchToRows` and `columnValues` give `Value`s at
 * the edge; `makeBatch` builds a batch from `Value`s.
 */
export interface Batch {
  readonly schema: BatchSchema
  /** One column per schema column, in `schema.columns` order, each `rowCount` long. */
  readonly columns: ReadonlyArray<ColumnData>
  readonly rowCount: number
}

/** `decimal(12,2)`, `list<int64>`, … — the spelling used in manifests and config overrides. */
export const formatLogicalType = (type: LogicalType): string => {
  switch (type.kind) {
    case "decimal":
      return `decimal(${type.precision},${type.scale})`
    case "list":
      return `list<${formatLogicalType(type.element)}>`
    default:
      return type.kind
  }
}

/** A batch from column data (in `schema.columns` order); `rowCount` is the first column's length. */
export const batchFromColumns = (schema: BatchSchema, columns: ReadonlyArray<ColumnData>): Batch => ({
  schema,
  columns,
  rowCount: columns[0]?.length ?? 0
})

/**
 * A batch from one array of `Value`s per column (in `schema.columns` order), each in the representation of its
 * column's logical type. Throws an Error naming the column and row when a value does not fit.
 */
export const makeBatch = (schema: BatchSchema, columns: ReadonlyArray<ReadonlyArray<Value>>): Batch => {
  const rowCount = columns[0]?.length ?? 0
  const data = schema.columns.map((column, c) => {
    const values = columns[c] ?? []
    if (values.length !== rowCount) {
      throw new InvalidValue(`column "${column.name}" has ${values.length} values, but the first column has ${rowCount}`)
    }
    const appender = valueAppender(column.type, Math.max(1, rowCount))
    for (let row = 0; row < rowCount; row++) {
      try {
        appender.append(values[row] ?? null)
      } catch (cause) {
        const reason = cause instanceof Error ? cause.message : String(cause)
        throw new InvalidValue(`column "${column.name}" (${formatLogicalType(column.type)}), row ${row + 1}: ${reason}`)
      }
    }
    return appender.finish()
  })
  return { schema, columns: data, rowCount }
}

/** Rows of a batch as objects keyed by column name (tests, examples, in-memory sinks, row transforms). */
export const batchToRows = (batch: Batch): Array<Record<string, Value>> => {
  const rows: Array<Record<string, Value>> = []
  const columns = batch.schema.columns
  for (let r = 0; r < batch.rowCount; r++) {
    const row: Record<string, Value> = {}
    for (let c = 0; c < columns.length; c++) row[columns[c]!.name] = valueAt(batch.columns[c]!, columns[c]!.type, r)
    rows.push(row)
  }
  return rows
}

/** Bytes held by a batch's buffers. */
export const batchByteLength = (batch: Batch): number => {
  let bytes = 0
  for (const column of batch.columns) bytes += dataByteLength(column)
  return bytes
}
