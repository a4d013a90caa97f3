import type { LogicalType } from "../../../core/batch.js"
import { type ColumnData, isValid } from "../../../core/columns/data.js"
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
 * Decimal columns (and lists of decimals) are parsed when their batch arrives, so a value that does not fit
 * fails that batch's write: the unscaled values, `limbs` little-endian 32-bit words per row of the innermost
 * (decimal) column. Undefined for every other type.
 */
export type PrepareColumn = (data: ColumnData) => Uint32Array | undefined

/** Words per unscaled value of a decimal of `precision` digits (its Parquet width, at least 64 bits). */
const decimalLimbs = (precision: number): number => limbCount(precision <= 18 ? 8 : decimalByteLength(precision))

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
