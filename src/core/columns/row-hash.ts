import type { BatchSchema, LogicalType } from "../batch.js"
import { boolAt, type ColumnData, type Int64Data, isValid } from "./data.js"

/**
 * `_rivet_row_hash`: FNV-1a 64 over a row's canonical bytes, computed from the column buffers (no value objects).
 * The canonical form is specified in docs/meta-columns.md so that anyone can recompute a hash; change nothing here
 * without changing that page and the hashes every earlier export holds.
 *
 * Per column, in schema order: `0x00` for NULL, else `0x01`, the value's byte length (uint32 little-endian) and
 * its bytes — integers as int64 little-endian (so widening int4 to int8 keeps the hash), floats as their IEEE 754
 * bits little-endian (every NaN as the canonical quiet NaN), bool one byte, date int32 days, time and timestamps
 * int64 microseconds, uuid its 16 bytes, text kinds (string, json, decimal, interval) their UTF-8 text, bytes as
 * they are, a list its element count (uint32) followed by each element's cell.
 */

// FNV-1a 64 in four 16-bit limbs: every product stays below 2^53, so plain numbers multiply exactly.
const OFFSET = [0x2325, 0x8422, 0x9ce4, 0xcbf2] as const
const PRIME_LOW = 0x1b3 // the prime is 2^40 + 0x1b3

class Fnv1a64 {
  private h0: number = OFFSET[0]
  private h1: number = OFFSET[1]
  private h2: number = OFFSET[2]
  private h3: number = OFFSET[3]

  reset(): void {
    this.h0 = OFFSET[0]
    this.h1 = OFFSET[1]
    this.h2 = OFFSET[2]
    this.h3 = OFFSET[3]
  }

  byte(value: number): void {
    const h0 = this.h0 ^ (value & 0xff)
    const t0 = h0 * PRIME_LOW
    let t1 = this.h1 * PRIME_LOW
    let t2 = this.h2 * PRIME_LOW + (h0 << 8)
    const t3 = this.h3 * PRIME_LOW + (this.h1 << 8)
    t1 += t0 >>> 16
    t2 += t1 >>> 16
    this.h0 = t0 & 0xffff
    this.h1 = t1 & 0xffff
    this.h2 = t2 & 0xffff
    this.h3 = (t3 + (t2 >>> 16)) & 0xffff
  }

  bytes(data: Uint8Array, start: number, end: number): void {
    for (let i = start; i < end; i++) this.byte(data[i]!)
  }

  uint32(value: number): void {
    this.byte(value)
    this.byte(value >>> 8)
    this.byte(value >>> 16)
    this.byte(value >>> 24)
  }

  /** The hash as two's complement int64 little-endian, at `view[offset…offset+8]`. */
  writeTo(view: DataView, offset: number): void {
    view.setUint32(offset, ((this.h1 << 16) | this.h0) >>> 0, true)
    view.setUint32(offset + 4, ((this.h3 << 16) | this.h2) >>> 0, true)
  }
}

const bytesOf = (array: ArrayBufferView): Uint8Array => new Uint8Array(array.buffer, array.byteOffset, array.byteLength)

/** Byte length of a present cell's value in the canonical form (fixed for every kind but text, bytes and lists). */
const valueLength = (column: ColumnData, type: LogicalType, row: number): number => {
  switch (column.layout) {
    case "int16":
    case "int32":
    case "int64":
      return type.kind === "date" ? 4 : 8
    case "float32":
      return 4
    case "float64":
      return 8
    case "bool":
      return 1
    case "fixed":
      return column.width
    case "binary":
      return column.offsets[row + 1]! - column.offsets[row]!
    case "list": {
      const element = type.kind === "list" ? type.element : type
      let length = 4
      for (let i = column.offsets[row]!; i < column.offsets[row + 1]!; i++) {
        length += isValid(column.child, i) ? 5 + valueLength(column.child, element, i) : 1
      }
      return length
    }
  }
}

const CANONICAL_NAN32 = 0x7fc00000

/** Feeds one cell (tag, length, value bytes). */
const feedCell = (hash: Fnv1a64, column: ColumnData, type: LogicalType, row: number, raw: Uint8Array): void => {
  if (!isValid(column, row)) {
    hash.byte(0)
    return
  }
  hash.byte(1)
  hash.uint32(valueLength(column, type, row))
  switch (column.layout) {
    case "int16":
    case "int32": {
      const value = column.values[row]!
      hash.uint32(value)
      // date stays int32 days; integers widen to int64 (the sign fills the high word).
      if (type.kind !== "date") hash.uint32(value < 0 ? 0xffffffff : 0)
      return
    }
    case "int64":
      hash.bytes(raw, row * 8, row * 8 + 8)
      return
    case "float32": {
      const value = column.values[row]!
      if (Number.isNaN(value)) hash.uint32(CANONICAL_NAN32)
      else hash.bytes(raw, row * 4, row * 4 + 4)
      return
    }
    case "float64": {
      const value = column.values[row]!
      if (Number.isNaN(value)) {
        hash.uint32(0)
        hash.uint32(0x7ff80000)
      } else hash.bytes(raw, row * 8, row * 8 + 8)
      return
    }
    case "bool":
      hash.byte(boolAt(column, row) ? 1 : 0)
      return
    case "fixed":
      hash.bytes(column.data, row * column.width, (row + 1) * column.width)
      return
    case "binary":
      hash.bytes(column.data, column.offsets[row]!, column.offsets[row + 1]!)
      return
    case "list": {
      const element = type.kind === "list" ? type.element : type
      const start = column.offsets[row]!
      const end = column.offsets[row + 1]!
      hash.uint32(end - start)
      const childRaw = rawBytes(column.child)
      for (let i = start; i < end; i++) feedCell(hash, column.child, element, i, childRaw)
      return
    }
  }
}

/** The buffer of a fixed-width numeric column as bytes, read in place. */
const rawBytes = (column: ColumnData): Uint8Array => {
  switch (column.layout) {
    case "int64":
    case "float32":
    case "float64":
      return bytesOf(column.values)
    default:
      return EMPTY
  }
}

const EMPTY = new Uint8Array(0)

/** The `_rivet_row_hash` column of a batch whose columns are `columns` (described by `schema`), `rowCount` long. */
export const rowHashColumn = (schema: BatchSchema, columns: ReadonlyArray<ColumnData>, rowCount: number): Int64Data => {
  const values = new BigInt64Array(rowCount)
  const view = new DataView(values.buffer)
  const raws = columns.map(rawBytes)
  const hash = new Fnv1a64()
  for (let row = 0; row < rowCount; row++) {
    hash.reset()
    for (let c = 0; c < columns.length; c++) feedCell(hash, columns[c]!, schema.columns[c]!.type, row, raws[c]!)
    hash.writeTo(view, row * 8)
  }
  return { layout: "int64", length: rowCount, nullCount: 0, validity: undefined, values }
}
