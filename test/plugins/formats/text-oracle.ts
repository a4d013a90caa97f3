import { stringify } from "csv-stringify/sync"
import { type Batch, type BatchSchema, type LogicalType, type Value, valueAt } from "../../../src/core/batch.js"
import { shortestFloat32 } from "./roundtrip-arbitraries.js"
import { renderDate, renderTime, renderTimestamp, renderTimestamptz } from "../../../src/core/temporal-text.js"

/**
 * The value-by-value text renderers the CSV and NDJSON formats used before they rendered straight from column
 * buffers into bytes, kept as the oracle the byte renderers are compared with (text-identity.test.ts), with one
 * change: a float32 is the shortest decimal that reads back to the float4 (what PostgreSQL's text gave before
 * batches held float4 values in a Float32Array). Every function takes a non-null value in
 * the representation `src/core/batch.ts` defines for its logical type; NULL is the caller's business.
 * Dates and times come from `src/core/temporal-text.ts` (exact, never through JS `Date`).
 */

/** Renders a non-null value of one logical type as text. */
export type Renderer = (value: Value) => string

export { renderDate, renderTime, renderTimestamp, renderTimestamptz }

/** JS shortest round-trip text; `NaN`, `Infinity`, `-Infinity`, and `-0` kept distinct from `0`. */
export const renderFloat = (n: number): string => (n === 0 && 1 / n < 0 ? "-0" : `${n}`)

const HEX_PAIRS: ReadonlyArray<string> = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, "0"))

/** Lowercase hex, two digits per byte, no prefix. */
export const renderBytes = (bytes: Uint8Array): string => {
  // Short values (hashes, ids) are cheaper by table than by allocating a Buffer view.
  if (bytes.length > 64) return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString("hex")
  let hex = ""
  for (let i = 0; i < bytes.length; i++) hex += HEX_PAIRS[bytes[i]!]!
  return hex
}

/**
 * JSON text is valid JSON already, so it is embedded as is — except line breaks, which can only be insignificant
 * whitespace in valid JSON and would split an NDJSON line: they become spaces.
 */
export const renderJsonText = (text: string): string =>
  text.includes("\n") || text.includes("\r") ? text.replace(/[\r\n]/g, " ") : text

const describeValue = (value: Value): string => {
  if (value === undefined) return "no value (the column holds fewer values than the batch has rows)"
  if (value instanceof Uint8Array) return "bytes"
  if (Array.isArray(value)) return "an array"
  return `${typeof value} ${String(value).slice(0, 40)}`
}

// Sources promise one representation per type (see batch.ts); a wrong one fails loudly instead of being misrendered.
const wrongValue = (expected: string, value: Value): never => {
  throw new TypeError(`expected ${expected}, got ${describeValue(value)}`)
}
const num = (value: Value): number => (typeof value === "number" ? value : wrongValue("a number", value))
const big = (value: Value): bigint => (typeof value === "bigint" ? value : wrongValue("a bigint", value))
const str = (value: Value): string => (typeof value === "string" ? value : wrongValue("a string", value))
const bool = (value: Value): boolean => (typeof value === "boolean" ? value : wrongValue("a boolean", value))
const bin = (value: Value): Uint8Array => (value instanceof Uint8Array ? value : wrongValue("a Uint8Array", value))
const arr = (value: Value): ReadonlyArray<Value> => (Array.isArray(value) ? value : wrongValue("an array", value))

const quoted = (text: string): string => `"${text}"`

const renderJsonFloat = (n: number): string => (Number.isFinite(n) ? renderFloat(n) : quoted(`${n}`))

/**
 * The JSON rendering of a non-null value (NDJSON, and list elements in CSV): numbers for int16/int32/float
 * (non-finite floats as the strings `"NaN"`, `"Infinity"`, `"-Infinity"`), strings for int64 and decimal (exact),
 * json embedded as a nested value, everything else as the string of its text rendering. Returns `undefined` for a
 * type it does not know.
 */
export const jsonRenderer = (type: LogicalType): Renderer | undefined => {
  switch (type.kind) {
    case "int16":
    case "int32":
      return (value) => `${num(value)}`
    case "int64":
      return (value) => `"${big(value)}"`
    case "float32":
      return (value) => renderJsonFloat(shortestFloat32(num(value)))
    case "float64":
      return (value) => renderJsonFloat(num(value))
    case "bool":
      return (value) => (bool(value) ? "true" : "false")
    case "decimal":
    case "string":
    case "uuid":
    case "interval":
      return (value) => JSON.stringify(str(value))
    case "date":
      return (value) => quoted(renderDate(num(value)))
    case "time":
      return (value) => quoted(renderTime(big(value)))
    case "timestamp":
      return (value) => quoted(renderTimestamp(big(value)))
    case "timestamptz":
      return (value) => quoted(renderTimestamptz(big(value)))
    case "json":
      return (value) => renderJsonText(str(value))
    case "bytes":
      return (value) => quoted(renderBytes(bin(value)))
    case "list": {
      const element = jsonRenderer(type.element)
      return element && listRenderer(element)
    }
    default:
      return undefined
  }
}

const listRenderer =
  (element: Renderer): Renderer =>
  (value) => {
    const items = arr(value)
    let text = "["
    for (let i = 0; i < items.length; i++) {
      const item = items[i]
      if (i > 0) text += ","
      text += item === null || item === undefined ? "null" : element(item)
    }
    return `${text}]`
  }

/**
 * The plain-text rendering of a non-null value (a CSV field before quoting): booleans `true`/`false`, numbers and
 * exact decimals as text, ISO dates and times, bytes as hex, json and interval text as given, lists as JSON arrays
 * (see {@link jsonRenderer}). Returns `undefined` for a type it does not know.
 */
export const textRenderer = (type: LogicalType): Renderer | undefined => {
  switch (type.kind) {
    case "int16":
    case "int32":
      return (value) => `${num(value)}`
    case "int64":
      return (value) => `${big(value)}`
    case "float32":
      return (value) => renderFloat(shortestFloat32(num(value)))
    case "float64":
      return (value) => renderFloat(num(value))
    case "bool":
      return (value) => (bool(value) ? "true" : "false")
    case "decimal":
    case "string":
    case "uuid":
    case "json":
    case "interval":
      return (value) => str(value)
    case "date":
      return (value) => renderDate(num(value))
    case "time":
      return (value) => renderTime(big(value))
    case "timestamp":
      return (value) => renderTimestamp(big(value))
    case "timestamptz":
      return (value) => renderTimestamptz(big(value))
    case "bytes":
      return (value) => renderBytes(bin(value))
    case "list":
      return jsonRenderer(type)
    default:
      return undefined
  }
}

const NEEDS_QUOTING = /[",\r\n]/

/**
 * A CSV field as csv-stringify quotes it with `quoted_match: /^$/` (test/plugins/formats/csv/ pins the equivalence).
 */
const csvQuote = (text: string): string =>
  text === "" || NEEDS_QUOTING.test(text) ? `"${text.replaceAll('"', '""')}"` : text

/** A whole CSV part as the old encoder wrote it: header, then one line per row, NULL as an empty field. */
export const oracleCsv = (schema: BatchSchema, batches: ReadonlyArray<Batch>): string => {
  const types = schema.columns.map((column) => column.type)
  const renderers = types.map((type) => textRenderer(type)!)
  let text = stringify([schema.columns.map((column) => column.name)], { quoted_match: /^$/, quote_record_delimiter: true })
  for (const batch of batches) {
    for (let r = 0; r < batch.rowCount; r++) {
      const fields = types.map((type, c) => {
        const value = valueAt(batch.columns[c]!, type, r)
        return value === null ? "" : csvQuote(renderers[c]!(value))
      })
      text += `${fields.join(",")}\n`
    }
  }
  return text
}

/** A whole NDJSON part as the old encoder wrote it. */
export const oracleNdjson = (schema: BatchSchema, batches: ReadonlyArray<Batch>): string => {
  const types = schema.columns.map((column) => column.type)
  const renderers = types.map((type) => jsonRenderer(type)!)
  let text = ""
  for (const batch of batches) {
    for (let r = 0; r < batch.rowCount; r++) {
      const fields = types.map((type, c) => {
        const value = valueAt(batch.columns[c]!, type, r)
        return `${JSON.stringify(schema.columns[c]!.name)}:${value === null ? "null" : renderers[c]!(value)}`
      })
      text += `{${fields.join(",")}}\n`
    }
  }
  return text
}
