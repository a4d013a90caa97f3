import { makeData, type Data, type DataType } from "apache-arrow"
import type { LogicalType, Value } from "rivet/plugin"
import { arrowType, decimalBitWidth } from "./types.js"

type Values = ReadonlyArray<Value>

/** The validity bitmap (LSB first, 1 = present) and null count of a column; no bitmap when nothing is NULL. */
const validity = (values: Values): { nullBitmap: Uint8Array | undefined; nullCount: number } => {
  let nullCount = 0
  for (const value of values) if (value === null) nullCount++
  if (nullCount === 0) return { nullBitmap: undefined, nullCount }
  const nullBitmap = new Uint8Array(Math.ceil(values.length / 8))
  values.forEach((value, index) => {
    if (value !== null) nullBitmap[index >> 3]! |= 1 << (index & 7)
  })
  return { nullBitmap, nullCount }
}

const wrong = (expected: string, value: Value): Error =>
  new Error(`expected ${expected}, got ${value instanceof Uint8Array ? "bytes" : Array.isArray(value) ? "a list" : typeof value}`)

const numbers = <A extends Int16Array | Int32Array | Float32Array | Float64Array>(
  values: Values,
  make: (length: number) => A
): A => {
  const out = make(values.length)
  values.forEach((value, index) => {
    if (value === null) return
    if (typeof value !== "number") throw wrong("a number", value)
    out[index] = value
  })
  return out
}

const bigints = (values: Values): BigInt64Array => {
  const out = new BigInt64Array(values.length)
  values.forEach((value, index) => {
    if (value === null) return
    if (typeof value !== "bigint") throw wrong("a bigint", value)
    out[index] = value
  })
  return out
}

const bits = (values: Values): Uint8Array => {
  const out = new Uint8Array(Math.ceil(values.length / 8))
  values.forEach((value, index) => {
    if (value === null) return
    if (typeof value !== "boolean") throw wrong("a boolean", value)
    if (value) out[index >> 3]! |= 1 << (index & 7)
  })
  return out
}

const encoder = new TextEncoder()

/** Offsets and concatenated bytes of a variable-width column (Utf8 text or Binary). */
const variableWidth = (values: Values, toBytes: (value: Value) => Uint8Array) => {
  const pieces: Array<Uint8Array | undefined> = values.map((value) => (value === null ? undefined : toBytes(value)))
  const valueOffsets = new Int32Array(values.length + 1)
  let total = 0
  pieces.forEach((piece, index) => {
    total += piece?.length ?? 0
    if (total > 0x7fffffff) throw new Error("a batch holds more than 2 GiB of text or bytes in one column; lower batch_size")
    valueOffsets[index + 1] = total
  })
  const data = new Uint8Array(total)
  pieces.forEach((piece, index) => piece && data.set(piece, valueOffsets[index]!))
  return { valueOffsets, data }
}

const text = (value: Value): Uint8Array => {
  if (typeof value !== "string") throw wrong("text", value)
  return encoder.encode(value)
}

const bytes = (value: Value): Uint8Array => {
  if (!(value instanceof Uint8Array)) throw wrong("bytes", value)
  return value
}

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

/** Decimal128/256 values: two's-complement little-endian integers, as 32-bit words. */
const decimals = (values: Values, precision: number, scale: number): Uint32Array => {
  const bitWidth = decimalBitWidth(precision)
  const stride = bitWidth / 32
  const out = new Uint32Array(values.length * stride)
  values.forEach((value, index) => {
    if (value === null) return
    if (typeof value !== "string") throw wrong("decimal text", value)
    let word = BigInt.asUintN(bitWidth, unscaledDecimal(value, precision, scale))
    for (let w = 0; w < stride; w++) {
      out[index * stride + w] = Number(word & 0xffffffffn)
      word >>= 32n
    }
  })
  return out
}

const list = (values: Values, element: LogicalType, type: DataType): Data => {
  const { nullBitmap, nullCount } = validity(values)
  const valueOffsets = new Int32Array(values.length + 1)
  const items: Array<Value> = []
  values.forEach((value, index) => {
    if (value !== null) {
      if (!Array.isArray(value)) throw wrong("a list", value)
      items.push(...(value as ReadonlyArray<Value>))
    }
    valueOffsets[index + 1] = items.length
  })
  const child = columnData(element, items)
  return makeData({ type, length: values.length, nullCount, nullBitmap, valueOffsets, child } as never)
}

/** One column of a batch as Arrow data, values converted exactly (no JS `Date`, no float for decimals). */
export const columnData = (logical: LogicalType, values: Values): Data => {
  const type = arrowType(logical)
  if (logical.kind === "list") return list(values, logical.element, type)
  const { nullBitmap, nullCount } = validity(values)
  const common = { type, length: values.length, nullCount, nullBitmap }
  const fixed = (data: ArrayBufferView) => makeData({ ...common, data } as never)
  switch (logical.kind) {
    case "int16":
      return fixed(numbers(values, (n) => new Int16Array(n)))
    case "int32":
    case "date":
      return fixed(numbers(values, (n) => new Int32Array(n)))
    case "float32":
      return fixed(numbers(values, (n) => new Float32Array(n)))
    case "float64":
      return fixed(numbers(values, (n) => new Float64Array(n)))
    case "int64":
    case "time":
    case "timestamp":
    case "timestamptz":
      return fixed(bigints(values))
    case "bool":
      return fixed(bits(values))
    case "decimal":
      return fixed(decimals(values, logical.precision, logical.scale))
    case "bytes":
      return makeData({ ...common, ...variableWidth(values, bytes) } as never)
    case "string":
    case "uuid":
    case "json":
    case "interval":
      return makeData({ ...common, ...variableWidth(values, text) } as never)
  }
}
