import { makeData, type Data, type DataType } from "apache-arrow"
import type { BinaryData, ColumnData, FixedData, LogicalType } from "rivet-export/plugin"
import { arrowType, decimalBitWidth } from "./types.js"

// ignoreBOM: a text that starts with U+FEFF keeps it (the default decoder drops it).
const decoder = new TextDecoder("utf-8", { ignoreBOM: true })

/**
 * Exact decimal text (`-12.30`) → unscaled integer at `scale`. More fraction digits than `scale` are accepted
 * only when they are zeros; a value with more than `precision` digits is refused rather than rounded.
 */
export const unscaledDecimal = (value: string, precision: number, scale: number): bigint => {
  if (/^[+-]?(nan|inf(inity)?)$/i.test(value.trim())) {
    throw new Error(`${value} cannot be stored in an Arrow decimal; override the column to { type: string } or float64`)
  }
  const match = /^([+-]?)(\d*)(?:\.(\d*))?$/.exec(value.trim())
  if (!match || (match[2] === "" && (match[3] ?? "") === "")) {
    throw new Error(`expected decimal text such as -12.30, got ${JSON.stringify(value.slice(0, 40))}`)
  }
  const [, sign, whole = "", fraction = ""] = match
  if (/[1-9]/.test(fraction.slice(scale))) {
    throw new Error(`${value} has more than ${scale} fraction digits, which decimal(${precision},${scale}) cannot hold exactly`)
  }
  const digits = `${whole}${fraction.slice(0, scale).padEnd(scale, "0")}`.replace(/^0+(?=\d)/, "")
  if (digits.length > precision) throw new Error(`${value} does not fit decimal(${precision},${scale})`)
  const unscaled = BigInt(digits || "0")
  return sign === "-" ? -unscaled : unscaled
}

/** Decimal128/256 values from exact decimal text: two's-complement little-endian integers, as 32-bit words. */
const decimals = (column: BinaryData, precision: number, scale: number): Uint32Array => {
  const bitWidth = decimalBitWidth(precision)
  const stride = bitWidth / 32
  const out = new Uint32Array(column.length * stride)
  for (let index = 0; index < column.length; index++) {
    const start = column.offsets[index]!
    const end = column.offsets[index + 1]!
    if (column.validity !== undefined && (column.validity[index >> 3]! & (1 << (index & 7))) === 0) continue
    let word = BigInt.asUintN(bitWidth, unscaledDecimal(decoder.decode(column.data.subarray(start, end)), precision, scale))
    for (let w = 0; w < stride; w++) {
      out[index * stride + w] = Number(word & 0xffffffffn)
      word >>= 32n
    }
  }
  return out
}

const HEX = new TextEncoder().encode("0123456789abcdef")

/** 16-byte UUIDs → their canonical 36-character text, as Utf8 offsets and bytes. */
const uuidText = (column: FixedData) => {
  const valueOffsets = new Int32Array(column.length + 1)
  const data = new Uint8Array(column.length * 36)
  let at = 0
  for (let index = 0; index < column.length; index++) {
    const valid = column.validity === undefined || (column.validity[index >> 3]! & (1 << (index & 7))) !== 0
    if (valid) {
      for (let i = 0; i < 16; i++) {
        if (i === 4 || i === 6 || i === 8 || i === 10) data[at++] = 45
        const byte = column.data[index * 16 + i]!
        data[at++] = HEX[byte >>> 4]!
        data[at++] = HEX[byte & 15]!
      }
    }
    valueOffsets[index + 1] = at
  }
  return { valueOffsets, data: data.subarray(0, at) }
}

/**
 * One column of a batch as Arrow data. Rivet's batches already use the Arrow memory layout, so numbers, booleans,
 * text and bytes are handed over without copying; decimals (exact text) and uuids (16 bytes) are converted.
 */
export const columnData = (logical: LogicalType, column: ColumnData): Data => {
  const type: DataType = arrowType(logical)
  const common = { type, length: column.length, nullCount: column.nullCount, nullBitmap: column.validity }
  switch (column.layout) {
    case "list":
      if (logical.kind !== "list") break
      return makeData({ ...common, valueOffsets: column.offsets, child: columnData(logical.element, column.child) } as never)
    case "fixed":
      return makeData({ ...common, ...uuidText(column) } as never)
    case "binary":
      if (logical.kind === "decimal") return makeData({ ...common, data: decimals(column, logical.precision, logical.scale) } as never)
      return makeData({ ...common, valueOffsets: column.offsets, data: column.data } as never)
    default:
      return makeData({ ...common, data: column.values } as never)
  }
  throw new Error(`a ${column.layout} column cannot hold ${logical.kind} values`)
}
