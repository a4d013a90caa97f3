import type { LogicalType } from "../../runtime/batch.js"
import { boolAt, type ColumnData, isValid } from "../../runtime/columns/data.js"
import { limbCount, parseDecimal } from "./decimal.js"
import { decimalByteLength } from "./schema.js"

/** A value the column's logical type cannot hold; `row` is the index within the batch. */
export class InvalidValue extends Error {
  constructor(
    readonly row: number,
    message: string
  ) {
    super(message)
  }
}

/**
 * Appends rows `[from, to)` of a batch column to a row-group column, as the values hyparquet-writer takes:
 * numbers, bigints and booleans read from the typed arrays, and for byte columns (text, JSON, bytes, UUIDs)
 * views into the batch's buffers — no JS string per value. hyparquet-writer takes INT64 and DECIMAL values only
 * as bigints, so those still cost one bigint per value.
 */
export type AppendColumn = (data: ColumnData, words: Uint32Array | undefined, from: number, to: number, out: Array<unknown>) => void

/**
 * Decimal columns (and lists of decimals) are parsed when their batch arrives, so a value that does not fit
 * fails that batch's write: the unscaled values, `limbs` little-endian 32-bit words per row of the innermost
 * (decimal) column. Undefined for every other type.
 */
export type PrepareColumn = (data: ColumnData) => Uint32Array | undefined

const layoutError = (type: LogicalType, data: ColumnData): Error =>
  new Error(`a ${type.kind} column arrived with the ${data.layout} layout`)

type Read = (data: ColumnData, row: number, words: Uint32Array | undefined) => unknown

const reader = (type: LogicalType): Read => {
  switch (type.kind) {
    case "int16":
    case "int32":
    case "date":
    case "int64":
    case "time":
    case "timestamp":
    case "timestamptz":
    case "float32":
    case "float64":
      return (data, row) => {
        if (data.layout !== "int16" && data.layout !== "int32" && data.layout !== "int64" && data.layout !== "float32" && data.layout !== "float64") {
          throw layoutError(type, data)
        }
        return data.values[row]
      }
    case "bool":
      return (data, row) => {
        if (data.layout !== "bool") throw layoutError(type, data)
        return boolAt(data, row)
      }
    case "uuid":
      return (data, row) => {
        if (data.layout !== "fixed") throw layoutError(type, data)
        return data.data.subarray(row * data.width, (row + 1) * data.width)
      }
    case "string":
    case "interval":
    case "json":
    case "bytes":
      return (data, row) => {
        if (data.layout !== "binary") throw layoutError(type, data)
        return data.data.subarray(data.offsets[row]!, data.offsets[row + 1]!)
      }
    case "decimal":
      return decimalReader(type.precision)
    case "list":
      return listReader(reader(type.element))
  }
}

const TWO_32 = 4294967296

/** Words per unscaled value of a decimal of `precision` digits (its Parquet width, at least 64 bits). */
const decimalLimbs = (precision: number): number => limbCount(precision <= 18 ? 8 : decimalByteLength(precision))

/** The unscaled values as the bigints hyparquet-writer wants (it writes them as INT32, INT64 or big-endian bytes). */
const decimalReader = (precision: number): Read => {
  const limbs = decimalLimbs(precision)
  return (_data, row, words) => {
    if (words === undefined) throw new Error("a decimal column was not prepared")
    const at = row * limbs
    if (limbs === 2) {
      const high = words[at + 1]! | 0
      // Below 2^53 in magnitude the double is exact: one bigint instead of three.
      if (high >= -2097152 && high < 2097152) return BigInt(high * TWO_32 + words[at]!)
      return (BigInt(high) << 32n) | BigInt(words[at]!)
    }
    let value = BigInt(words[at + limbs - 1]! | 0)
    for (let l = limbs - 2; l >= 0; l--) value = (value << 32n) | BigInt(words[at + l]!)
    return value
  }
}

const decimalOf = (type: LogicalType): Extract<LogicalType, { kind: "decimal" }> | undefined =>
  type.kind === "decimal" ? type : type.kind === "list" ? decimalOf(type.element) : undefined

/** The row of the top-level column that holds row `row` of its innermost child. */
const outerRow = (data: ColumnData, row: number): number => {
  if (data.layout !== "list") return row
  const inner = outerRow(data.child, row)
  let low = 0
  let high = data.length - 1
  while (low < high) {
    const mid = (low + high + 1) >>> 1
    if (data.offsets[mid]! <= inner) low = mid
    else high = mid - 1
  }
  return low
}

const innermostData = (data: ColumnData): ColumnData => (data.layout === "list" ? innermostData(data.child) : data)

/** Parses the decimal text of a column of `type` (or of its innermost list elements); throws InvalidValue. */
export const prepareColumn = (type: LogicalType): PrepareColumn => {
  const decimal = decimalOf(type)
  if (decimal === undefined) return () => undefined
  const { precision, scale } = decimal
  const limbs = decimalLimbs(precision)
  return (column) => {
    const data = innermostData(column)
    if (data.layout !== "binary") throw new Error(`a decimal column arrived with the ${data.layout} layout`)
    const words = new Uint32Array(data.length * limbs)
    for (let row = 0; row < data.length; row++) {
      if (!isValid(data, row)) continue
      const problem = parseDecimal(data.data, data.offsets[row]!, data.offsets[row + 1]!, precision, scale, words, row * limbs, limbs)
      if (problem !== undefined) throw new InvalidValue(outerRow(column, row), problem)
    }
    return words
  }
}

const listReader = (element: Read): Read => (data, row, words) => {
  if (data.layout !== "list") throw new Error(`a list column arrived with the ${data.layout} layout`)
  const start = data.offsets[row]!
  const end = data.offsets[row + 1]!
  const child = data.child
  const list: Array<unknown> = new Array(end - start)
  for (let i = start; i < end; i++) {
    list[i - start] = isValid(child, i) ? element(child, i, words) : null
  }
  return list
}

/** How a column of `type` is appended to a row group. */
export const appendColumn = (type: LogicalType): AppendColumn => {
  const read = reader(type)
  return (data, words, from, to, out) => {
    for (let row = from; row < to; row++) out.push(isValid(data, row) ? read(data, row, words) : null)
  }
}

/** Bytes rows `[from, to)` of a column occupy in its buffers: what a row group of them costs to hold. */
export const sliceByteLength = (data: ColumnData, from: number, to: number): number => {
  const rows = to - from
  switch (data.layout) {
    case "bool":
      return rows / 8
    case "int16":
      return rows * 2
    case "int32":
    case "float32":
      return rows * 4
    case "int64":
    case "float64":
      return rows * 8
    case "fixed":
      return rows * data.width
    case "binary":
      return rows * 4 + data.offsets[to]! - data.offsets[from]!
    case "list":
      return rows * 4 + sliceByteLength(data.child, data.offsets[from]!, data.offsets[to]!)
  }
}
