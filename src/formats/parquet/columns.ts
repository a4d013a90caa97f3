import { Buffer } from "node:buffer"
import type { LogicalType, Value } from "../../runtime/batch.js"

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
 * Appends rows `[from, to)` of a batch column to a row-group column, converted to what hyparquet-writer takes.
 * Returns an estimate of the bytes the rows add (their plain encoded size plus a slot each), which lets the
 * encoder bound a row group by memory as well as by rows.
 */
export type AppendColumn = (values: ReadonlyArray<Value>, from: number, to: number, out: Array<unknown>) => number

/** Converts one non-null value; throws a plain Error (the caller knows the row). */
type Convert = (value: Value) => unknown

const shortText = (text: string): string => (text.length > 60 ? `${text.slice(0, 57)}...` : text)

const describe = (value: Value): string => {
  if (value instanceof Uint8Array) return "bytes"
  if (Array.isArray(value)) return "a list"
  return `${typeof value} ${typeof value === "string" ? JSON.stringify(shortText(value)) : String(value)}`
}

const expected = (what: string, value: Value): Error => new Error(`expected ${what}, got ${describe(value)}`)

const integerIn = (min: number, max: number, what: string): Convert => (value) => {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) throw expected(what, value)
  return value
}

const bigintValue: Convert = (value) => {
  if (typeof value !== "bigint") throw expected("a bigint", value)
  return value
}

const numberValue: Convert = (value) => {
  if (typeof value !== "number") throw expected("a number", value)
  return value
}

const booleanValue: Convert = (value) => {
  if (typeof value !== "boolean") throw expected("a boolean", value)
  return value
}

const stringValue: Convert = (value) => {
  if (typeof value !== "string") throw expected("a string", value)
  return value
}

const bytesValue: Convert = (value) => {
  if (!(value instanceof Uint8Array)) throw expected("bytes (Uint8Array)", value)
  return value
}

// JSON text goes in as UTF-8 bytes (small Buffers share Node's pool): without a converted type the writer
// would build a TextEncoder per value.
const jsonValue: Convert = (value) => {
  if (typeof value !== "string") throw expected("JSON text", value)
  return Buffer.from(value, "utf8")
}

const HEX = new Int8Array(128).fill(-1)
for (let i = 0; i < 10; i++) HEX[48 + i] = i
for (let i = 0; i < 6; i++) {
  HEX[65 + i] = 10 + i
  HEX[97 + i] = 10 + i
}

const hexAt = (text: string, index: number): number => {
  const code = text.charCodeAt(index)
  return code < 128 ? HEX[code]! : -1
}

/**
 * Writes the 16 bytes of a UUID (with or without hyphens, either case) into `target` at `offset`.
 * hyparquet-writer's own conversion runs a regex and 16 `parseInt`s per value.
 */
const writeUuid = (text: string, target: Uint8Array, offset: number): boolean => {
  const hyphens = text.length === 36
  if (!hyphens && text.length !== 32) return false
  if (hyphens && (text[8] !== "-" || text[13] !== "-" || text[18] !== "-" || text[23] !== "-")) return false
  let index = 0
  for (let byte = 0; byte < 16; byte++) {
    if (hyphens && (byte === 4 || byte === 6 || byte === 8 || byte === 10)) index++
    const high = hexAt(text, index)
    const low = hexAt(text, index + 1)
    if (high < 0 || low < 0) return false
    target[offset + byte] = (high << 4) | low
    index += 2
  }
  return true
}

const uuidValue: Convert = (value) => {
  const bytes = new Uint8Array(16)
  if (typeof value !== "string" || !writeUuid(value, bytes, 0)) throw expected("a UUID", value)
  return bytes
}

const decimalTextError = (text: string): Error =>
  new Error(`expected decimal text such as -12.30, got ${JSON.stringify(shortText(text))}`)

/**
 * Exact decimal text → unscaled integer at `scale`, checked against `precision` digits. Extra fraction digits
 * are accepted only when they are zeros: anything else would silently round. Runs once per value, hence the
 * hand-written scan (no regex, and plain number arithmetic while the digits fit a double exactly).
 */
export const decimalToUnscaled = (text: string, precision: number, scale: number): bigint => {
  const length = text.length
  const signed = length > 0 && (text.charCodeAt(0) === 45 || text.charCodeAt(0) === 43)
  let point = -1
  let digitCount = 0
  for (let i = signed ? 1 : 0; i < length; i++) {
    const code = text.charCodeAt(i)
    if (code === 46 && point < 0) point = i
    else if (code < 48 || code > 57) throw decimalTextError(text)
    else digitCount++
  }
  if (digitCount === 0) throw decimalTextError(text)
  const wholeEnd = point < 0 ? length : point
  let fractionEnd = length
  const fractionDigits = point < 0 ? 0 : length - point - 1
  if (fractionDigits > scale) {
    fractionEnd = point + 1 + scale
    for (let i = fractionEnd; i < length; i++) {
      if (text.charCodeAt(i) !== 48) {
        throw new Error(`${shortText(text)} has more than ${scale} fraction digits, which decimal(${precision},${scale}) cannot hold exactly`)
      }
    }
  }
  const padding = scale - Math.min(fractionDigits, scale)
  const wholeStart = signed ? 1 : 0
  const digits = wholeEnd - wholeStart + (point < 0 ? 0 : fractionEnd - point - 1) + padding
  let magnitude: bigint
  if (digits <= 15) {
    let value = 0
    for (let i = wholeStart; i < fractionEnd; i++) if (i !== point) value = value * 10 + (text.charCodeAt(i) - 48)
    magnitude = BigInt(value * 10 ** padding)
  } else {
    const fraction = point < 0 ? "" : text.slice(point + 1, fractionEnd)
    magnitude = BigInt(text.slice(wholeStart, wholeEnd) + fraction + "0".repeat(padding))
  }
  if (digits > precision && magnitude >= 10n ** BigInt(precision)) {
    throw new Error(`${shortText(text)} does not fit decimal(${precision},${scale}) (at most ${precision - scale} integer digits)`)
  }
  return text.charCodeAt(0) === 45 ? -magnitude : magnitude
}

const decimalValue = (precision: number, scale: number): Convert => (value) => {
  if (typeof value !== "string") throw expected("decimal text", value)
  return decimalToUnscaled(value, precision, scale)
}

const listValue = (convertElement: Convert): Convert => (value) => {
  if (!Array.isArray(value)) throw expected("a list", value)
  const list: ReadonlyArray<Value> = value
  return list.map((element) => (element === null ? null : convertElement(element)))
}

const converter = (type: LogicalType): Convert => {
  switch (type.kind) {
    case "int16":
      return integerIn(-32768, 32767, "an int16")
    case "int32":
    case "date":
      return integerIn(-2147483648, 2147483647, "an int32")
    case "int64":
    case "time":
    case "timestamp":
    case "timestamptz":
      return bigintValue
    case "float32":
    case "float64":
      return numberValue
    case "bool":
      return booleanValue
    case "string":
    case "interval":
      return stringValue
    case "json":
      return jsonValue
    case "bytes":
      return bytesValue
    case "uuid":
      return uuidValue
    case "decimal":
      return decimalValue(type.precision, type.scale)
    case "list":
      return listValue(converter(type.element))
  }
}

/** Bytes per non-null value of fixed-size types; undefined for types measured value by value. */
const fixedWidth = (type: LogicalType): number | undefined => {
  switch (type.kind) {
    case "bool":
      return 1
    case "int16":
    case "int32":
    case "date":
    case "float32":
      return 4
    case "decimal":
    case "uuid":
      return 16
    case "string":
    case "interval":
    case "json":
    case "bytes":
    case "list":
      return undefined
    default:
      return 8
  }
}

// Per value, whatever its type: the array slot and the object behind it.
const SLOT_BYTES = 16

const measure = (value: Value): number => {
  if (typeof value === "string") return value.length
  if (value instanceof Uint8Array) return value.byteLength
  if (Array.isArray(value)) {
    const list: ReadonlyArray<Value> = value
    let bytes = 4
    for (const element of list) bytes += element === null ? 1 : SLOT_BYTES + measure(element)
    return bytes
  }
  return 8
}

const appendWith = (convert: Convert, width: number | undefined): AppendColumn => (values, from, to, out) => {
  let bytes = (to - from) * SLOT_BYTES
  for (let row = from; row < to; row++) {
    const value = values[row] ?? null
    if (value === null) {
      out.push(null)
      continue
    }
    try {
      out.push(convert(value))
    } catch (error) {
      throw new InvalidValue(row, error instanceof Error ? error.message : String(error))
    }
    bytes += width ?? measure(value)
  }
  return bytes
}

// One backing buffer per appended run instead of one 16-byte ArrayBuffer per value.
const appendUuids: AppendColumn = (values, from, to, out) => {
  const slab = new Uint8Array((to - from) * 16)
  for (let row = from; row < to; row++) {
    const value = values[row] ?? null
    if (value === null) {
      out.push(null)
      continue
    }
    const offset = (row - from) * 16
    if (typeof value !== "string" || !writeUuid(value, slab, offset)) {
      throw new InvalidValue(row, expected("a UUID", value).message)
    }
    out.push(slab.subarray(offset, offset + 16))
  }
  return (to - from) * (SLOT_BYTES + 16)
}

/** How a column of `type` is appended to a row group. */
export const appendColumn = (type: LogicalType): AppendColumn =>
  type.kind === "uuid" ? appendUuids : appendWith(converter(type), fixedWidth(type))
