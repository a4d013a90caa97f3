import type { LogicalType } from "../../../core/batch.js"
import { type ColumnData, isValid } from "../../../core/columns/data.js"
import { quoteInPlace, writeCsvText, writeHex, writeJsonString, writeJsonText, writeUuid } from "./escape.js"
import { FloatTexts, floatWriter } from "./floats.js"
import { float32Text, float64Text, int64Halves, safeInt64, writeInt } from "./numbers.js"
import type { ByteOut } from "./out.js"
import { TimestampWriter, writeClock, writeDate } from "./temporal.js"

/**
 * Field renderers of the text formats, from column buffers straight into output bytes: digits from the typed
 * arrays, UTF-8 text copied (quoted or escaped by scanning its bytes), hex and dates written byte by byte. A JS
 * string is made only for a float's digits. The text of every type is documented in docs/formats/csv.md and
 * docs/formats/ndjson.md.
 */

/** Writes the (non-NULL) value of row `row` of the column it was made for. */
export type FieldWriter = (out: ByteOut, row: number) => void

/** Makes the writer of one batch's column; the column's layout was checked with `layoutMismatch` (layout.ts). */
export type FieldFactory = (column: ColumnData) => FieldWriter

const QUOTE = 0x22
const COMMA = 0x2c
const OPEN = 0x5b
const CLOSE = 0x5d
const Z = 0x5a

const ascii = (text: string): Uint8Array => Uint8Array.from(text, (char) => char.charCodeAt(0))
const TRUE = ascii("true")
const FALSE = ascii("false")
const NULL = ascii("null")

const bytesOf = (column: ColumnData) => {
  if (column.layout !== "binary") throw new TypeError(`expected binary column data, got ${column.layout}`)
  return column
}

const int64Text = (quote: boolean): FieldFactory => (column) => {
  if (column.layout !== "int64") throw new TypeError(`expected int64 column data, got ${column.layout}`)
  const values = column.values
  const halves = int64Halves(values)
  return (out, row) => {
    if (quote) out.byte(QUOTE)
    const n = safeInt64(halves, row)
    if (n === undefined) out.ascii(`${values[row]!}`)
    else writeInt(out, n)
    if (quote) out.byte(QUOTE)
  }
}

/** The text shared by CSV and JSON of the types whose CSV field never needs quoting, unquoted. */
const plainText = (type: LogicalType): FieldFactory | undefined => {
  switch (type.kind) {
    case "int16":
    case "int32":
      return (column) => {
        if (column.layout !== "int16" && column.layout !== "int32") throw new TypeError(`expected integers, got ${column.layout}`)
        const values = column.values
        return (out, row) => writeInt(out, values[row]!)
      }
    case "int64":
      return int64Text(false)
    case "float32":
    case "float64": {
      const texts = new FloatTexts(type.kind === "float32" ? float32Text : float64Text)
      return (column) => floatWriter(column, texts)
    }
    case "bool":
      return (column) => {
        if (column.layout !== "bool") throw new TypeError(`expected bool column data, got ${column.layout}`)
        const values = column.values
        return (out, row) => {
          if ((values[row >>> 3]! & (1 << (row & 7))) !== 0) out.copy(TRUE, 0, 4)
          else out.copy(FALSE, 0, 5)
        }
      }
    case "date":
      return (column) => {
        if (column.layout !== "int32") throw new TypeError(`expected int32 column data, got ${column.layout}`)
        const values = column.values
        return (out, row) => writeDate(out, values[row]!)
      }
    case "time":
      return (column) => {
        if (column.layout !== "int64") throw new TypeError(`expected int64 column data, got ${column.layout}`)
        const values = column.values
        const halves = int64Halves(values)
        return (out, row) => writeClock(out, safeInt64(halves, row) ?? Number(values[row]!))
      }
    case "timestamp":
    case "timestamptz": {
      const timestamps = new TimestampWriter()
      const zone = type.kind === "timestamptz"
      return (column) => {
        if (column.layout !== "int64") throw new TypeError(`expected int64 column data, got ${column.layout}`)
        const values = column.values
        const halves = int64Halves(values)
        return (out, row) => {
          timestamps.write(out, values, halves, row)
          if (zone) out.byte(Z)
        }
      }
    }
    case "uuid":
      return (column) => {
        if (column.layout !== "fixed") throw new TypeError(`expected fixed column data, got ${column.layout}`)
        const data = column.data
        return (out, row) => writeUuid(out, data, row * 16)
      }
    default:
      return undefined
  }
}

const quoted =
  (factory: FieldFactory): FieldFactory =>
  (column) => {
    const write = factory(column)
    return (out, row) => {
      out.byte(QUOTE)
      write(out, row)
      out.byte(QUOTE)
    }
  }

const listOf =
  (element: FieldFactory): FieldFactory =>
  (column) => {
    if (column.layout !== "list") throw new TypeError(`expected list column data, got ${column.layout}`)
    const offsets = column.offsets
    const child = column.child
    const write = element(child)
    return (out, row) => {
      out.byte(OPEN)
      const end = offsets[row + 1]!
      for (let i = offsets[row]!; i < end; i++) {
        if (i > offsets[row]!) out.byte(COMMA)
        if (isValid(child, i)) write(out, i)
        else out.copy(NULL, 0, 4)
      }
      out.byte(CLOSE)
    }
  }

/**
 * The JSON of a value (NDJSON, and list elements in CSV): numbers for int16/int32/float (non-finite floats as the
 * strings `"NaN"`, `"Infinity"`, `"-Infinity"`), strings for int64 and decimal (exact), json embedded as a nested
 * value, everything else as the string of its text. `undefined` for a type outside the contract.
 */
export const jsonField = (type: LogicalType): FieldFactory | undefined => {
  switch (type.kind) {
    case "int64":
      return int64Text(true)
    case "float32":
    case "float64": {
      const text = type.kind === "float32" ? float32Text : float64Text
      const texts = new FloatTexts((n) => (Number.isFinite(n) ? text(n) : `"${n}"`))
      return (column) => floatWriter(column, texts)
    }
    case "date":
    case "time":
    case "timestamp":
    case "timestamptz":
    case "uuid":
      return quoted(plainText(type)!)
    case "decimal":
    case "string":
    case "interval":
      return (column) => {
        const { data, offsets } = bytesOf(column)
        return (out, row) => writeJsonString(out, data, offsets[row]!, offsets[row + 1]!)
      }
    case "json":
      return (column) => {
        const { data, offsets } = bytesOf(column)
        return (out, row) => writeJsonText(out, data, offsets[row]!, offsets[row + 1]!)
      }
    case "bytes":
      return (column) => {
        const { data, offsets } = bytesOf(column)
        return (out, row) => {
          out.byte(QUOTE)
          writeHex(out, data, offsets[row]!, offsets[row + 1]!)
          out.byte(QUOTE)
        }
      }
    case "list": {
      const element = jsonField(type.element)
      return element && listOf(element)
    }
    default:
      return plainText(type)
  }
}

/**
 * A CSV field: numbers, booleans, dates and times, uuids as their plain text (never quoted); decimal, string,
 * interval and json text quoted as RFC 4180 requires; bytes as lowercase hex (`""` when empty); lists as JSON
 * arrays (see `jsonField`), quoted as needed. `undefined` for a type outside the contract.
 */
export const csvField = (type: LogicalType): FieldFactory | undefined => {
  switch (type.kind) {
    case "decimal":
    case "string":
    case "interval":
    case "json":
      return (column) => {
        const { data, offsets } = bytesOf(column)
        return (out, row) => writeCsvText(out, data, offsets[row]!, offsets[row + 1]!)
      }
    case "bytes":
      return (column) => {
        const { data, offsets } = bytesOf(column)
        return (out, row) => {
          const start = offsets[row]!
          const end = offsets[row + 1]!
          if (start === end) {
            out.byte(QUOTE)
            out.byte(QUOTE)
          } else writeHex(out, data, start, end)
        }
      }
    case "list": {
      const list = jsonField(type)
      return (
        list &&
        ((column) => {
          const write = list(column)
          return (out, row) => {
            const start = out.pos
            write(out, row)
            quoteInPlace(out, start)
          }
        })
      )
    }
    default:
      return plainText(type)
  }
}
