import type { LogicalType, Value } from "./logical.js"
import { BinaryBuilder, BoolBuilder, FixedBuilder, ListBuilder, NumberBuilder } from "./builders.js"
import { boolAt, type ColumnData, isValid } from "./data.js"
import { float32Text } from "./float32.js"

/**
 * The edge between column buffers and `Value`s (see `Value` in batch.ts): row objects for users and tests, and
 * batches built from plain values by plugins and transforms. Not the hot path: one JS value per cell.
 */

/** A value that does not fit its column's logical type; `message` says what was expected. */
export class InvalidValue extends Error {}

const shortText = (text: string): string => (text.length > 60 ? `${text.slice(0, 57)}...` : text)

const describe = (value: Value): string => {
  if (value instanceof Uint8Array) return "bytes"
  if (Array.isArray(value)) return "a list"
  return `${typeof value} ${typeof value === "string" ? JSON.stringify(shortText(value)) : String(value)}`
}

const expected = (what: string, value: Value): InvalidValue => new InvalidValue(`expected ${what}, got ${describe(value)}`)

const HEX = "0123456789abcdef"

const hexValue = (code: number): number => {
  if (code >= 48 && code <= 57) return code - 48
  const lower = code | 0x20
  return lower >= 97 && lower <= 102 ? lower - 87 : -1
}

/** Writes the 16 bytes of a UUID (with or without hyphens, either case) at `target[offset…]`. */
export const writeUuidText = (text: string, target: Uint8Array, offset: number): boolean => {
  const hyphens = text.length === 36
  if (!hyphens && text.length !== 32) return false
  if (hyphens && (text[8] !== "-" || text[13] !== "-" || text[18] !== "-" || text[23] !== "-")) return false
  let index = 0
  for (let byte = 0; byte < 16; byte++) {
    if (hyphens && (byte === 4 || byte === 6 || byte === 8 || byte === 10)) index++
    const high = hexValue(text.charCodeAt(index))
    const low = hexValue(text.charCodeAt(index + 1))
    if (high < 0 || low < 0) return false
    target[offset + byte] = (high << 4) | low
    index += 2
  }
  return true
}

/** The canonical text of 16 UUID bytes: lowercase, hyphenated. */
export const uuidText = (bytes: Uint8Array, offset: number): string => {
  let text = ""
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) text += "-"
    const byte = bytes[offset + i]!
    text += HEX[byte >>> 4]! + HEX[byte & 15]!
  }
  return text
}

/** Appends plain values to the column builder of one logical type, checking each value's representation. */
export interface ValueAppender {
  readonly append: (value: Value) => void
  readonly finish: () => ColumnData
}

const integerIn = (min: number, max: number, what: string) => (value: Value): number => {
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > max) throw expected(what, value)
  return value
}

/** A builder of `type` fed with `Value`s. Throws `InvalidValue` for a value of the wrong representation. */
export const valueAppender = (type: LogicalType, capacity = 1024): ValueAppender => {
  switch (type.kind) {
    case "int16":
    case "int32":
    case "date": {
      const builder = new NumberBuilder(type.kind === "int16" ? "int16" : "int32", capacity)
      const check = type.kind === "int16" ? integerIn(-32768, 32767, "an int16") : integerIn(-2147483648, 2147483647, "an int32")
      return {
        append: (value) => (value === null ? builder.appendNull() : builder.push(check(value))),
        finish: () => builder.finish()
      }
    }
    case "int64":
    case "time":
    case "timestamp":
    case "timestamptz": {
      const builder = new NumberBuilder("int64", capacity)
      return {
        append: (value) => {
          if (value === null) return builder.appendNull()
          if (typeof value !== "bigint") throw expected("a bigint", value)
          if (BigInt.asIntN(64, value) !== value) throw expected("a 64-bit integer", value)
          builder.pushBigInt(value)
        },
        finish: () => builder.finish()
      }
    }
    case "float32":
    case "float64": {
      const builder = new NumberBuilder(type.kind, capacity)
      return {
        append: (value) => {
          if (value === null) return builder.appendNull()
          if (typeof value !== "number") throw expected("a number", value)
          builder.push(value)
        },
        finish: () => builder.finish()
      }
    }
    case "bool": {
      const builder = new BoolBuilder()
      return {
        append: (value) => {
          if (value === null) return builder.appendNull()
          if (typeof value !== "boolean") throw expected("a boolean", value)
          builder.push(value)
        },
        finish: () => builder.finish()
      }
    }
    case "uuid": {
      const builder = new FixedBuilder(16, capacity)
      return {
        append: (value) => {
          if (value === null) return builder.appendNull()
          if (typeof value !== "string") throw expected("a UUID", value)
          const offset = builder.slot()
          if (!writeUuidText(value, builder.bytes, offset)) throw expected("a UUID", value)
        },
        finish: () => builder.finish()
      }
    }
    case "bytes": {
      const builder = new BinaryBuilder(capacity)
      return {
        append: (value) => {
          if (value === null) return builder.appendNull()
          if (!(value instanceof Uint8Array)) throw expected("bytes (Uint8Array)", value)
          builder.appendBytes(value)
        },
        finish: () => builder.finish()
      }
    }
    case "string":
    case "json":
    case "decimal":
    case "interval": {
      const builder = new BinaryBuilder(capacity)
      const what = type.kind === "decimal" ? "decimal text" : type.kind === "json" ? "JSON text" : "a string"
      return {
        append: (value) => {
          if (value === null) return builder.appendNull()
          if (typeof value !== "string") throw expected(what, value)
          builder.appendString(value)
        },
        finish: () => builder.finish()
      }
    }
    case "list": {
      const element = valueAppender(type.element, capacity)
      const child = { length: 0, finish: element.finish }
      const builder = new ListBuilder(child)
      return {
        append: (value) => {
          if (value === null) return builder.appendNull()
          if (!Array.isArray(value)) throw expected("a list", value)
          const list: ReadonlyArray<Value> = value
          for (const item of list) element.append(item)
          child.length += list.length
          builder.endList()
        },
        finish: () => builder.finish()
      }
    }
  }
}

// ignoreBOM: a leading U+FEFF is part of the value (the default decoder drops it).
const decoder = new TextDecoder("utf-8", { ignoreBOM: true })

/**
 * The shortest decimal that reads back as the float32 `value`, as a JS number: 1.1 rather than the double
 * 1.100000023841858 a Float32Array holds — the number PostgreSQL prints for that float4 (see `float32Text`).
 */
export const shortestFloat32 = (value: number): number => (Number.isFinite(value) && value !== 0 ? Number(float32Text(value)) : value)

/** The `Value` of row `row` (see the table on `Value`): a fresh JS value, safe to keep. */
export const valueAt = (column: ColumnData, type: LogicalType, row: number): Value => {
  if (!isValid(column, row)) return null
  switch (column.layout) {
    case "float32":
      return shortestFloat32(column.values[row]!)
    case "int16":
    case "int32":
    case "float64":
    case "int64":
      return column.values[row]!
    case "bool":
      return boolAt(column, row)
    case "fixed":
      return uuidText(column.data, row * column.width)
    case "binary": {
      const bytes = column.data.subarray(column.offsets[row]!, column.offsets[row + 1]!)
      return type.kind === "bytes" ? bytes.slice() : decoder.decode(bytes)
    }
    case "list": {
      const element = type.kind === "list" ? type.element : type
      const out: Array<Value> = []
      for (let i = column.offsets[row]!; i < column.offsets[row + 1]!; i++) out.push(valueAt(column.child, element, i))
      return out
    }
  }
}

/** Every value of a column, in row order. */
export const columnValues = (column: ColumnData, type: LogicalType): Array<Value> => {
  const out: Array<Value> = new Array(column.length)
  for (let row = 0; row < column.length; row++) out[row] = valueAt(column, type, row)
  return out
}
