/**
 * Column data in the Arrow memory layout: the buffers a batch carries for one column. No JS object or string per
 * value: fixed-width values sit in typed arrays, variable-width values are bytes plus `length + 1` offsets.
 *
 * | logical type                              | layout   | buffers                                            |
 * |-------------------------------------------|----------|----------------------------------------------------|
 * | int16                                     | `int16`  | `values: Int16Array`                               |
 * | int32, date (days since 1970-01-01)       | `int32`  | `values: Int32Array`                               |
 * | int64, time, timestamp, timestamptz (µs)  | `int64`  | `values: BigInt64Array`                            |
 * | float32 / float64                         | `float32` / `float64` | `values: Float32Array` / `Float64Array` |
 * | bool                                      | `bool`   | `values: Uint8Array`, one bit per row (LSB first)  |
 * | uuid                                      | `fixed`  | `data: Uint8Array`, `width` (16) bytes per row     |
 * | string, json, decimal, interval (UTF-8 text), bytes | `binary` | `offsets: Int32Array`, `data: Uint8Array` |
 * | list<T>                                   | `list`   | `offsets: Int32Array` into `child` (column of T)   |
 *
 * Text kinds hold UTF-8: decimal as exact text (`-12.30`), interval as ISO-8601 (`P1Y2M3DT4H5M6.5S`), json as the
 * source's JSON text. `validity` is a bitmap (bit set = value present), absent when `nullCount` is 0; a null
 * slot holds zero (fixed layouts) or an empty range (binary, list). Buffers may be views into larger
 * ArrayBuffers; a consumer must not write to them.
 */
export type ColumnData =
  | Int16Data
  | Int32Data
  | Int64Data
  | Float32Data
  | Float64Data
  | BoolData
  | FixedData
  | BinaryData
  | ListData

interface DataBase {
  readonly length: number
  readonly nullCount: number
  readonly validity: Uint8Array | undefined
}

export interface Int16Data extends DataBase {
  readonly layout: "int16"
  readonly values: Int16Array
}
export interface Int32Data extends DataBase {
  readonly layout: "int32"
  readonly values: Int32Array
}
export interface Int64Data extends DataBase {
  readonly layout: "int64"
  readonly values: BigInt64Array
}
export interface Float32Data extends DataBase {
  readonly layout: "float32"
  readonly values: Float32Array
}
export interface Float64Data extends DataBase {
  readonly layout: "float64"
  readonly values: Float64Array
}
export interface BoolData extends DataBase {
  readonly layout: "bool"
  readonly values: Uint8Array
}
export interface FixedData extends DataBase {
  readonly layout: "fixed"
  readonly width: number
  readonly data: Uint8Array
}
export interface BinaryData extends DataBase {
  readonly layout: "binary"
  readonly offsets: Int32Array
  readonly data: Uint8Array
}
export interface ListData extends DataBase {
  readonly layout: "list"
  readonly offsets: Int32Array
  readonly child: ColumnData
}

export type Layout = ColumnData["layout"]

/** Whether row `row` holds a value (not SQL NULL). */
export const isValid = (column: ColumnData, row: number): boolean => {
  const validity = column.validity
  return validity === undefined || (validity[row >>> 3]! & (1 << (row & 7))) !== 0
}

/** The bit of a `bool` column at `row` (false for a null slot). */
export const boolAt = (column: BoolData, row: number): boolean => (column.values[row >>> 3]! & (1 << (row & 7))) !== 0

/** Bytes the column's buffers hold (what a batch costs in memory, and what a transfer moves). */
export const dataByteLength = (column: ColumnData): number => {
  const validity = column.validity?.byteLength ?? 0
  switch (column.layout) {
    case "fixed":
      return validity + column.data.byteLength
    case "binary":
      return validity + column.offsets.byteLength + column.data.byteLength
    case "list":
      return validity + column.offsets.byteLength + dataByteLength(column.child)
    default:
      return validity + column.values.byteLength
  }
}

/** The ArrayBuffers behind a column, for `postMessage` transfer lists. */
export const dataBuffers = (column: ColumnData, into: Set<ArrayBufferLike> = new Set()): Set<ArrayBufferLike> => {
  if (column.validity !== undefined) into.add(column.validity.buffer)
  switch (column.layout) {
    case "fixed":
      into.add(column.data.buffer)
      break
    case "binary":
      into.add(column.offsets.buffer).add(column.data.buffer)
      break
    case "list":
      into.add(column.offsets.buffer)
      dataBuffers(column.child, into)
      break
    default:
      into.add(column.values.buffer)
  }
  return into
}
