import { type BatchSchema, formatLogicalType, type LogicalType } from "../../runtime/batch.js"
import { type ColumnData, isValid, type Layout } from "../../runtime/columns/data.js"
import { float32Text, float64Text, int64Halves, safeInt64, writeInt } from "./numbers.js"
import { FloatTexts, floatWriter } from "./floats.js"
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

/** Makes the writer of one batch's column; the column's layout was checked with `layoutMismatch`. */
export type FieldFactory = (column: ColumnData) => FieldWriter

const QUOTE = 0x22
const COMMA = 0x2c
const LF = 0x0a
const CR = 0x0d
const BACKSLASH = 0x5c
const SPACE = 0x20
const OPEN = 0x5b
const CLOSE = 0x5d
const Z = 0x5a

const ascii = (text: string): Uint8Array => Uint8Array.from(text, (char) => char.charCodeAt(0))
const TRUE = ascii("true")
const FALSE = ascii("false")
const NULL = ascii("null")
const HEX = ascii("0123456789abcdef")

/** The layout each logical type's column data must have (see `ColumnData`). */
const LAYOUT: Record<LogicalType["kind"], Layout> = {
  int16: "int16",
  int32: "int32",
  date: "int32",
  int64: "int64",
  time: "int64",
  timestamp: "int64",
  timestamptz: "int64",
  float32: "float32",
  float64: "float64",
  bool: "bool",
  uuid: "fixed",
  string: "binary",
  json: "binary",
  decimal: "binary",
  interval: "binary",
  bytes: "binary",
  list: "list"
}

/** Why a column's data cannot hold values of `type` (its layout, its length), or `undefined` when it can. */
export const layoutMismatch = (type: LogicalType, column: ColumnData, rows: number): string | undefined => {
  const expected = LAYOUT[type.kind]
  if (column.layout !== expected) return `its data has the ${column.layout} layout, expected ${expected}`
  if (column.length !== rows) return `it holds ${column.length} values for ${rows} rows`
  if (column.layout === "fixed" && column.width !== 16) return `its values are ${column.width} bytes wide, expected 16`
  if (column.layout === "list" && type.kind === "list") {
    const childRows = column.offsets[column.length] ?? 0
    const child = layoutMismatch(type.element, column.child, childRows)
    return child && `its list elements do not fit: ${child}`
  }
  return undefined
}

/** The first column of a batch whose data does not fit the schema, as a message, or `undefined`. */
export const batchMismatch = (
  schema: BatchSchema,
  columns: ReadonlyArray<ColumnData>,
  rows: number
): string | undefined => {
  for (let c = 0; c < schema.columns.length; c++) {
    const column = schema.columns[c]!
    const problem = layoutMismatch(column.type, columns[c]!, rows)
    if (problem) return `column "${column.name}" (${formatLogicalType(column.type)}) does not fit its type: ${problem}`
  }
  return undefined
}

// ── text bytes ─────────────────────────────────────────────────────────────

const writeHex = (out: ByteOut, data: Uint8Array, start: number, end: number): void => {
  out.ensure(2 * (end - start))
  const buf = out.buf
  let pos = out.pos
  for (let i = start; i < end; i++) {
    const byte = data[i]!
    buf[pos++] = HEX[byte >>> 4]!
    buf[pos++] = HEX[byte & 15]!
  }
  out.pos = pos
}

const writeUuid = (out: ByteOut, data: Uint8Array, offset: number): void => {
  out.ensure(36)
  const buf = out.buf
  let pos = out.pos
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) buf[pos++] = 0x2d
    const byte = data[offset + i]!
    buf[pos++] = HEX[byte >>> 4]!
    buf[pos++] = HEX[byte & 15]!
  }
  out.pos = pos
}

/** Bytes that JSON.stringify escapes: control characters, `"` and `\`. Everything else (UTF-8 included) is kept. */
const JSON_ESCAPE = new Uint8Array(256)
for (let b = 0; b < 0x20; b++) JSON_ESCAPE[b] = 1
JSON_ESCAPE[QUOTE] = 1
JSON_ESCAPE[BACKSLASH] = 1
const SHORT_ESCAPE: Record<number, number> = { 0x08: 0x62, 0x09: 0x74, 0x0a: 0x6e, 0x0c: 0x66, 0x0d: 0x72 }

/** A JSON string of UTF-8 text, escaped exactly as `JSON.stringify` does (`\n`, `\u001f`, `\"`, `\\`). */
const writeJsonString = (out: ByteOut, data: Uint8Array, start: number, end: number): void => {
  let clean = true
  for (let i = start; i < end; i++) {
    if (JSON_ESCAPE[data[i]!] === 1) {
      clean = false
      break
    }
  }
  if (clean) {
    out.ensure(end - start + 2)
    out.buf[out.pos++] = QUOTE
    out.copy(data, start, end)
    out.buf[out.pos++] = QUOTE
    return
  }
  out.ensure(6 * (end - start) + 2)
  const buf = out.buf
  let pos = out.pos
  buf[pos++] = QUOTE
  for (let i = start; i < end; i++) {
    const byte = data[i]!
    if (JSON_ESCAPE[byte] !== 1) {
      buf[pos++] = byte
      continue
    }
    buf[pos++] = BACKSLASH
    if (byte === QUOTE || byte === BACKSLASH) buf[pos++] = byte
    else if (SHORT_ESCAPE[byte] !== undefined) buf[pos++] = SHORT_ESCAPE[byte]
    else {
      buf[pos++] = 0x75 // u00XX, lowercase hex as JSON.stringify writes it
      buf[pos++] = 0x30
      buf[pos++] = 0x30
      buf[pos++] = HEX[byte >>> 4]!
      buf[pos++] = HEX[byte & 15]!
    }
  }
  buf[pos++] = QUOTE
  out.pos = pos
}

/**
 * JSON text embedded as is, except line breaks — which valid JSON can only hold as insignificant whitespace and
 * which would split an NDJSON line — written as spaces.
 */
const writeJsonText = (out: ByteOut, data: Uint8Array, start: number, end: number): void => {
  const at = out.pos
  out.copy(data, start, end)
  const buf = out.buf
  for (let i = at; i < out.pos; i++) if (buf[i] === LF || buf[i] === CR) buf[i] = SPACE
}

const CSV_SPECIAL = new Uint8Array(256)
CSV_SPECIAL[QUOTE] = 1
CSV_SPECIAL[COMMA] = 1
CSV_SPECIAL[LF] = 1
CSV_SPECIAL[CR] = 1

/**
 * A CSV field of UTF-8 text (RFC 4180): quoted when empty (so that it differs from NULL, an empty unquoted field)
 * or when it holds `,` `"` CR or LF, with `"` doubled inside; otherwise as is.
 */
export const writeCsvText = (out: ByteOut, data: Uint8Array, start: number, end: number): void => {
  let special = start === end
  let quotes = 0
  for (let i = start; i < end; i++) {
    const byte = data[i]!
    if (CSV_SPECIAL[byte] === 1) {
      special = true
      if (byte === QUOTE) quotes++
    }
  }
  if (!special) return out.copy(data, start, end)
  out.ensure(end - start + quotes + 2)
  const buf = out.buf
  let pos = out.pos
  buf[pos++] = QUOTE
  if (quotes === 0) {
    out.pos = pos
    out.copy(data, start, end)
    pos = out.pos
  } else {
    for (let i = start; i < end; i++) {
      const byte = data[i]!
      buf[pos++] = byte
      if (byte === QUOTE) buf[pos++] = QUOTE
    }
  }
  buf[pos++] = QUOTE
  out.pos = pos
}

/** Quotes the CSV field written at `out.buf[start…pos)` in place when RFC 4180 requires it (see `writeCsvText`). */
const quoteInPlace = (out: ByteOut, start: number): void => {
  let special = start === out.pos
  let quotes = 0
  for (let i = start; i < out.pos; i++) {
    const byte = out.buf[i]!
    if (CSV_SPECIAL[byte] === 1) {
      special = true
      if (byte === QUOTE) quotes++
    }
  }
  if (!special) return
  const end = out.pos
  out.ensure(quotes + 2)
  const buf = out.buf
  let write = end + quotes + 2
  out.pos = write
  buf[--write] = QUOTE
  for (let i = end - 1; i >= start; i--) {
    const byte = buf[i]!
    buf[--write] = byte
    if (byte === QUOTE) buf[--write] = QUOTE
  }
  buf[--write] = QUOTE
}

// ── per type ───────────────────────────────────────────────────────────────

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
