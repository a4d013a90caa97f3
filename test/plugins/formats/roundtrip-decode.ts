import type { BatchSchema, LogicalType, Value } from "../../../src/core/batch.js"
import { parseCsv } from "./csv-reader.js"

/**
 * Strict readers for the text and JSON representations documented in docs/formats/csv.md and ndjson.md, back to
 * the values of `src/core/batch.ts`. Independent of src/plugins/formats/text (dates go through JS `Date`, shifted by
 * whole 400-year Gregorian cycles outside its range), and strict: any spelling other than the documented one
 * (a `+`, a leading zero, 5 fraction digits, uppercase hex, whitespace in JSON, …) throws.
 */

const fail = (what: string, text: string): never => {
  throw new Error(`not ${what}: ${JSON.stringify(text)}`)
}

const INTEGER = /^-?(0|[1-9]\d*)$/

const decodeInt = (text: string, min: number, max: number): number => {
  const n = Number(text)
  return INTEGER.test(text) && n >= min && n <= max ? n : fail(`an integer in ${min}..${max}`, text)
}

const decodeInt64 = (text: string): bigint => {
  const n = INTEGER.test(text) ? BigInt(text) : fail("an int64", text)
  return n >= -(2n ** 63n) && n < 2n ** 63n ? n : fail("an int64", text)
}

const SPECIAL_FLOATS = new Map([["NaN", Number.NaN], ["Infinity", Infinity], ["-Infinity", -Infinity], ["-0", -0]])

/** JS shortest round-trip text (what `String(n)` gives), `-0` for negative zero. */
const decodeFloat = (text: string): number => {
  const special = SPECIAL_FLOATS.get(text)
  if (special !== undefined) return special
  const n = Number(text)
  return /^-?[\d.e+-]+$/.test(text) && String(n) === text ? n : fail("a shortest float text", text)
}

const decodeDecimal = (text: string, precision: number, scale: number): string => {
  const match = /^(-?)(0|[1-9]\d*)(?:\.(\d+))?$/.exec(text) ?? fail("decimal text", text)
  const [, sign, whole, fraction = ""] = match
  const digits = whole!.replace(/^0$/, "").length
  if (fraction.length !== scale || digits > precision - scale) fail(`decimal(${precision},${scale}) text`, text)
  if (sign === "-" && !/[1-9]/.test(text)) fail("decimal text without a negative zero", text)
  return text
}

const DAYS_PER_400_YEARS = 146_097
const MS_PER_DAY = 86_400_000

/** Days since 1970-01-01 of a proleptic Gregorian date; throws for a day the month does not have. */
const daysFromCivil = (year: number, month: number, day: number, text: string): number => {
  const cycles = Math.floor((year - 2000) / 400)
  const near = year - cycles * 400
  const date = new Date(0)
  date.setUTCFullYear(near, month - 1, day)
  if (date.getUTCFullYear() !== near || date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) {
    fail("a calendar date", text)
  }
  return date.getTime() / MS_PER_DAY + cycles * DAYS_PER_400_YEARS
}

/** `YYYY-MM-DD`; years outside 0000–9999 as `+10000`, `-0001` (a sign and at least four digits). */
const decodeDate = (text: string): number => {
  const match = /^(?:(\d{4})|([+-])(\d{4,}))-(\d{2})-(\d{2})$/.exec(text) ?? fail("a date", text)
  const [, plain, sign, signed, month, day] = match
  let year: number
  if (plain !== undefined) year = Number(plain)
  else {
    year = sign === "-" ? -Number(signed) : Number(signed)
    const canonical = String(Math.abs(year)).padStart(4, "0") === signed
    if (!canonical || (year >= 0 && year <= 9999)) fail("an ISO 8601 expanded year", text)
  }
  return daysFromCivil(year, Number(month), Number(day), text)
}

const MICROS_PER_DAY = 86_400_000_000n

/** `HH:MM:SS.ffffff`, up to `24:00:00.000000` when `allow24`. */
const decodeClock = (text: string, allow24: boolean): bigint => {
  const match = /^(\d{2}):(\d{2}):(\d{2})\.(\d{6})$/.exec(text) ?? fail("a time", text)
  const [h, m, s, us] = match.slice(1).map(Number) as [number, number, number, number]
  const micros = BigInt(((h * 60 + m) * 60 + s) * 1_000_000 + us)
  if (m > 59 || s > 59 || micros > MICROS_PER_DAY || (!allow24 && micros === MICROS_PER_DAY)) fail("a time", text)
  return micros
}

const decodeTimestamp = (text: string): bigint => {
  const at = text.indexOf("T")
  if (at < 0) fail("a timestamp", text)
  return BigInt(decodeDate(text.slice(0, at))) * MICROS_PER_DAY + decodeClock(text.slice(at + 1), false)
}

const decodeUuid = (text: string): string =>
  /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(text) ? text : fail("a lowercase uuid", text)

const decodeHex = (text: string): Uint8Array =>
  /^(?:[0-9a-f]{2})*$/.test(text) ? new Uint8Array(Buffer.from(text, "hex")) : fail("lowercase hex", text)

/** A CSV field (already unquoted) of a non-list type. */
export const decodeText = (text: string, type: LogicalType): Value => {
  switch (type.kind) {
    case "int16":
      return decodeInt(text, -32768, 32767)
    case "int32":
      return decodeInt(text, -(2 ** 31), 2 ** 31 - 1)
    case "int64":
      return decodeInt64(text)
    case "float32":
    case "float64":
      return decodeFloat(text)
    case "decimal":
      return decodeDecimal(text, type.precision, type.scale)
    case "bool":
      return text === "true" ? true : text === "false" ? false : fail("true or false", text)
    case "date":
      return decodeDate(text)
    case "time":
      return decodeClock(text, true)
    case "timestamp":
      return decodeTimestamp(text)
    case "timestamptz":
      return text.endsWith("Z") ? decodeTimestamp(text.slice(0, -1)) : fail("a UTC timestamp", text)
    case "uuid":
      return decodeUuid(text)
    case "bytes":
      return decodeHex(text)
    case "string":
    case "json":
    case "interval":
      return text
    case "list":
      return decodeJson(text, type)
  }
}

const skipString = (text: string, quote: number): number => {
  let i = quote + 1
  while (text[i] !== '"') i += text[i] === "\\" ? 2 : 1
  return i + 1
}

/**
 * The raw texts of the members of a JSON array or object (`[…]`/`{…}`, already known to be valid JSON), split at
 * the top-level commas: whatever whitespace the writer put around a member stays in it.
 */
const members = (text: string): Array<string> => {
  const inner = text.slice(1, -1)
  if (inner === "") return []
  const parts: Array<string> = []
  let depth = 0
  let start = 0
  for (let i = 0; i < inner.length; ) {
    const ch = inner[i]
    if (ch === '"') {
      i = skipString(inner, i)
      continue
    }
    if (ch === "[" || ch === "{") depth++
    else if (ch === "]" || ch === "}") depth--
    else if (ch === "," && depth === 0) {
      parts.push(inner.slice(start, i))
      start = i + 1
    }
    i++
  }
  parts.push(inner.slice(start))
  return parts
}

const jsonString = (raw: string): string => {
  if (!raw.startsWith('"')) fail("a JSON string", raw)
  const parsed: unknown = JSON.parse(raw)
  return typeof parsed === "string" ? parsed : fail("a JSON string", raw)
}

/**
 * One JSON value as NDJSON (and CSV lists) write it. `json` comes back as its raw text — the literal `null` reads
 * as NULL, since NDJSON writes both the same way.
 */
export const decodeJson = (raw: string, type: LogicalType): Value => {
  if (type.kind === "json") return raw === "null" ? null : raw
  if (raw === "null") return null
  switch (type.kind) {
    case "int16":
    case "int32":
      return decodeText(raw, type)
    case "float32":
    case "float64": {
      if (!raw.startsWith('"')) {
        const n = decodeFloat(raw)
        return Number.isFinite(n) ? n : fail("a finite JSON number", raw)
      }
      const special = jsonString(raw)
      return ["NaN", "Infinity", "-Infinity"].includes(special) ? Number(special) : fail("NaN or ±Infinity", raw)
    }
    case "bool":
      return raw === "true" ? true : raw === "false" ? false : fail("true or false", raw)
    case "list":
      if (!raw.startsWith("[") || !raw.endsWith("]")) fail("a JSON array", raw)
      return members(raw).map((item) => decodeJson(item, type.element))
    default:
      return decodeText(jsonString(raw), type)
  }
}

const decodeObjectLine = (line: string, schema: BatchSchema): Array<Value> => {
  JSON.parse(line)
  if (!line.startsWith("{") || !line.endsWith("}")) fail("a JSON object", line)
  const fields = members(line)
  if (fields.length !== schema.columns.length) fail(`an object with ${schema.columns.length} keys`, line)
  return schema.columns.map((column, c) => {
    const field = fields[c]!
    const keyEnd = skipString(field, 0)
    if (JSON.parse(field.slice(0, keyEnd)) !== column.name || field[keyEnd] !== ":") {
      fail(`the key ${JSON.stringify(column.name)} in position ${c + 1}`, field)
    }
    return decodeJson(field.slice(keyEnd + 1), column.type)
  })
}

/** The rows of an NDJSON part: one object per `\n`-terminated line, keys in column order. */
export const readNdjson = (text: string, schema: BatchSchema): Array<Array<Value>> => {
  if (text === "") return []
  if (!text.endsWith("\n")) fail("NDJSON ending with a line break", text.slice(-40))
  return text.slice(0, -1).split("\n").map((line) => decodeObjectLine(line, schema))
}

/** The rows of a CSV part: the header must hold the column names; an unquoted empty field is NULL. */
export const readCsv = (text: string, schema: BatchSchema): Array<Array<Value>> => {
  const [header, ...records] = parseCsv(text)
  const names = schema.columns.map((column) => column.name)
  if (JSON.stringify(header) !== JSON.stringify(names)) fail(`the header ${JSON.stringify(names)}`, text.slice(0, 200))
  return records.map((record) => {
    if (record.length !== names.length) fail(`a record of ${names.length} fields`, JSON.stringify(record))
    return schema.columns.map((column, c) => {
      const field = record[c]!
      if (field === null) return null
      if (column.type.kind === "list") JSON.parse(field)
      return decodeText(field, column.type)
    })
  })
}
