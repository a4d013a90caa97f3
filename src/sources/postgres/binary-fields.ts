import { formatLogicalType, type LogicalType, shortestFloat32 } from "../../runtime/batch.js"
import { BinaryBuilder, BoolBuilder, FixedBuilder, ListBuilder, NumberBuilder } from "../../runtime/columns/builders.js"
import { valueAppender } from "../../runtime/columns/values.js"
import { DecodeFailure } from "./decode.js"
import type { ColumnPlan, Shape } from "./types.js"
import { integerDecimal, numericDecimal, numericInt64, writeGroup } from "./binary-numeric.js"
import { badSize, type FieldSink, int16At, int32At, int64At, scratch, scratchF32, swapInto, uint32At, writeInteger } from "./binary-wire.js"

export type { FieldSink } from "./binary-wire.js"

/**
 * Decoders of PostgreSQL's binary wire values (`COPY … (FORMAT binary)`, `typsend` output) straight into column
 * builders: integers and floats are byte-swapped into place, text is copied as bytes, numerics and intervals are
 * written as ASCII text — no JS string or object per value. The rules (and error messages) are those of the text
 * decoders in decode.ts: what the server's text rendering gave before, the binary path gives now.
 */
/** How one result column is read from binary COPY. */
export interface FieldReader {
  /** The COPY's SELECT renders this column as text (PostgreSQL's output function) for `make`'s sink to read. */
  readonly rendered: boolean
  readonly make: (capacity: number) => FieldSink
}

const INFINITY_HINT = "filter it out or replace it in SQL, e.g. NULLIF(col, 'infinity')"

const infinite = (text: string): DecodeFailure =>
  new DecodeFailure(`value ${text} has no representation outside PostgreSQL`, INFINITY_HINT)

const writeInt32LE = (target: Uint8Array, offset: number, value: number): void => {
  target[offset] = value & 0xff
  target[offset + 1] = (value >>> 8) & 0xff
  target[offset + 2] = (value >>> 16) & 0xff
  target[offset + 3] = (value >>> 24) & 0xff
}

/** Same-width integers and floats, and `time` (µs since midnight in both). */
const swapped = (layout: "int16" | "int32" | "int64" | "float32" | "float64", what: string) => (capacity: number): FieldSink => {
  const builder = new NumberBuilder(layout, capacity)
  const width = builder.width
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size !== width) throw badSize(what, size)
      const offset = builder.slot()
      swapInto(builder.bytes, offset, b, at, width)
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

/** A wider integer target (int2 → int32 / int64, int4 and oid → int64): sign- or zero-extended. */
const widened = (layout: "int32" | "int64", wireWidth: 2 | 4, unsigned: boolean, what: string) => (capacity: number): FieldSink => {
  const builder = new NumberBuilder(layout, capacity)
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size !== wireWidth) throw badSize(what, size)
      const value = wireWidth === 2 ? int16At(b, at) : unsigned ? uint32At(b, at) : int32At(b, at)
      const offset = builder.slot()
      writeInt32LE(builder.bytes, offset, value)
      if (layout === "int64") writeInt32LE(builder.bytes, offset + 4, unsigned || value >= 0 ? 0 : -1)
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

/** int2, int4, float4 → float64 (the `float64` override). */
const toFloat64 = (wire: "int2" | "int4" | "float4") => (capacity: number): FieldSink => {
  const builder = new NumberBuilder("float64", capacity)
  const width = wire === "int2" ? 2 : 4
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size !== width) throw badSize(wire, size)
      let value: number
      if (wire === "int2") value = int16At(b, at)
      else if (wire === "int4") value = int32At(b, at)
      else {
        swapInto(scratch, 0, b, at, 4)
        value = shortestFloat32(scratchF32[0]!)
      }
      const offset = builder.slot()
      builder.view.setFloat64(offset, value, true)
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

const bool = (capacity: number): FieldSink => {
  void capacity
  const builder = new BoolBuilder()
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size !== 1) throw badSize("bool", size)
      builder.push(b[at] !== 0)
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

/** PostgreSQL counts days from 2000-01-01. */
const PG_EPOCH_DAYS = 10957

const date = (capacity: number): FieldSink => {
  const builder = new NumberBuilder("int32", capacity)
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size !== 4) throw badSize("date", size)
      const days = int32At(b, at)
      if (days === 0x7fffffff) throw infinite("infinity")
      if (days === -0x80000000) throw infinite("-infinity")
      const offset = builder.slot()
      writeInt32LE(builder.bytes, offset, days + PG_EPOCH_DAYS)
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

// 946 684 800 000 000 µs from 1970-01-01 to 2000-01-01, split into 32-bit halves for carry arithmetic.
const PG_EPOCH_US = 946_684_800_000_000
const EPOCH_HI = Math.floor(PG_EPOCH_US / 2 ** 32)
const EPOCH_LO = PG_EPOCH_US - EPOCH_HI * 2 ** 32

/** timestamp / timestamptz: µs since 2000 → µs since 1970, in 32-bit halves (no BigInt per value). */
const timestamp = (capacity: number): FieldSink => {
  const builder = new NumberBuilder("int64", capacity)
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size !== 8) throw badSize("timestamp", size)
      const hi = int32At(b, at)
      const lo = uint32At(b, at + 4)
      if (hi === 0x7fffffff && lo === 0xffffffff) throw infinite("infinity")
      if (hi === -0x80000000 && lo === 0) throw infinite("-infinity")
      const low = lo + EPOCH_LO
      const carry = low >= 2 ** 32 ? 1 : 0
      const high = hi + EPOCH_HI + carry
      // PostgreSQL counts from 2000: its last ~30 years (after 294247-01-10) overflow 64-bit microseconds since 1970.
      if (high > 0x7fffffff) throw new DecodeFailure("timestamp is beyond 64-bit microseconds since 1970")
      const offset = builder.slot()
      writeInt32LE(builder.bytes, offset, carry === 1 ? low - 2 ** 32 : low)
      writeInt32LE(builder.bytes, offset + 4, high)
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

const uuid = (capacity: number): FieldSink => {
  const builder = new FixedBuilder(16, capacity)
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size !== 16) throw badSize("uuid", size)
      const offset = builder.slot()
      const target = builder.bytes
      for (let i = 0; i < 16; i++) target[offset + i] = b[at + i]!
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

/** Copies `size` bytes at `b[at…]` into the builder as one value. Short values byte by byte (no view per value). */
const appendRange = (builder: BinaryBuilder, b: Uint8Array, at: number, size: number): void => {
  builder.reserve(size)
  const data = builder.data
  const end = builder.end
  if (size <= 32) for (let i = 0; i < size; i++) data[end + i] = b[at + i]!
  else data.set(b.subarray(at, at + size), end)
  builder.commit(size)
}

/** Bytes as they arrive: text, varchar, bpchar, name, enums, json, bytea, and columns rendered as text by the SELECT. */
const passthrough = (skip: number, what: string) => (capacity: number): FieldSink => {
  const builder = new BinaryBuilder(capacity)
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (skip === 1) {
        // jsonb: a format version byte, then the text.
        if (size < 1 || b[at] !== 1) throw new DecodeFailure(`unexpected binary ${what} format version ${b[at]}`)
      }
      appendRange(builder, b, at + skip, size - skip)
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

const USECS_PER_HOUR = 3_600_000_000
const USECS_PER_MINUTE = 60_000_000
const USECS_PER_SEC = 1_000_000

/** Splits interval µs into hours, minutes, seconds, µs with C's truncating division (each part has the sign). */
const splitTime = (time: number | bigint): [number, number, number, number] => {
  if (typeof time === "number") {
    const hours = Math.trunc(time / USECS_PER_HOUR)
    let rest = time - hours * USECS_PER_HOUR
    const minutes = Math.trunc(rest / USECS_PER_MINUTE)
    rest -= minutes * USECS_PER_MINUTE
    const seconds = Math.trunc(rest / USECS_PER_SEC)
    return [hours, minutes, seconds, rest - seconds * USECS_PER_SEC]
  }
  const hours = time / 3_600_000_000n
  const rest = time - hours * 3_600_000_000n
  return [Number(hours), ...splitTime(Number(rest)).slice(1)] as [number, number, number, number]
}

/**
 * interval → the ISO-8601 text PostgreSQL writes with IntervalStyle=iso_8601 (EncodeInterval): `P1Y2M3DT4H5M6.5S`,
 * `PT0S` for zero, every part with its own sign, seconds as `-6.5S` when negative; `infinity`/`-infinity`
 * (PostgreSQL 17) as the server spells them.
 */
const interval = (capacity: number): FieldSink => {
  const builder = new BinaryBuilder(capacity)
  const part = (data: Uint8Array, at: number, value: number, unit: number): number => {
    if (value === 0) return at
    at = writeInteger(data, at, value)
    data[at] = unit
    return at + 1
  }
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size !== 16) throw badSize("interval", size)
      const time = int64At(b, at)
      const days = int32At(b, at + 8)
      const months = int32At(b, at + 12)
      if (months === 0x7fffffff && days === 0x7fffffff && time === 9223372036854775807n) return builder.appendString("infinity")
      if (months === -0x80000000 && days === -0x80000000 && time === -9223372036854775808n) return builder.appendString("-infinity")
      const years = Math.trunc(months / 12)
      const [hours, minutes, seconds, micros] = splitTime(time)
      builder.reserve(80)
      const data = builder.data
      let out = builder.end
      if (years === 0 && months % 12 === 0 && days === 0 && hours === 0 && minutes === 0 && seconds === 0 && micros === 0) {
        for (const c of [80, 84, 48, 83]) data[out++] = c // PT0S
        return builder.commit(out - builder.end)
      }
      data[out++] = 80 // P
      out = part(data, out, years, 89)
      out = part(data, out, months % 12, 77)
      out = part(data, out, days, 68)
      if (hours !== 0 || minutes !== 0 || seconds !== 0 || micros !== 0) data[out++] = 84 // T
      out = part(data, out, hours, 72)
      out = part(data, out, minutes, 77)
      if (seconds !== 0 || micros !== 0) {
        if (seconds < 0 || micros < 0) data[out++] = 45
        out = writeInteger(data, out, Math.abs(seconds))
        if (micros !== 0) {
          data[out++] = 46
          let fraction = Math.abs(micros)
          let digits = 6
          while (fraction % 10 === 0) {
            fraction /= 10
            digits--
          }
          out = writeGroup(data, out, fraction, digits)
        }
        data[out++] = 83 // S
      }
      builder.commit(out - builder.end)
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

const multiDimensional = (): DecodeFailure =>
  new DecodeFailure("multi-dimensional arrays are not supported", "unnest the array in SQL or cast it to text (col::text)")

/** A one-dimensional array (ndim, flags, element OID, [size, lower bound], then elements like fields) → a list. */
const list = (element: (capacity: number) => FieldSink) => (capacity: number): FieldSink => {
  const child = element(capacity * 2)
  const builder = new ListBuilder(child)
  return {
    get length() {
      return builder.length
    },
    value(b, at, size) {
      if (size < 12) throw badSize("array", size)
      const ndim = int32At(b, at)
      if (ndim > 1) throw multiDimensional()
      let pos = at + 12
      if (ndim === 1) {
        const count = int32At(b, pos)
        pos += 8
        const end = at + size
        for (let i = 0; i < count; i++) {
          if (pos + 4 > end) throw badSize("array", size)
          const length = int32At(b, pos)
          pos += 4
          if (length === -1) child.nul()
          else {
            if (pos + length > end) throw badSize("array", size)
            child.value(b, pos, length)
            pos += length
          }
        }
      }
      builder.endList()
    },
    nul: () => builder.appendNull(),
    finish: () => builder.finish()
  }
}

const textDecoder = new TextDecoder("utf-8", { ignoreBOM: true })

/**
 * The slow path for a column the SELECT renders as text and that needs today's text decoder (arrays of rendered
 * elements): one JS string per value, decoded by the plan's decoder and appended as a `Value`.
 */
const decodedText = (plan: ColumnPlan) => (capacity: number): FieldSink => {
  const appender = valueAppender(plan.type, capacity)
  const decode = plan.decode
  let length = 0
  return {
    get length() {
      return length
    },
    value(b, at, size) {
      const text = textDecoder.decode(b.subarray(at, at + size))
      appender.append(decode === undefined ? text : decode(text))
      length++
    },
    nul() {
      appender.append(null)
      length++
    },
    finish: () => appender.finish()
  }
}

// Types whose binary wire format is the text itself (textsend/bpcharsend/namesend/enum_send).
const TEXT_WIRE = new Set([25, 1042, 1043, 19])
const JSON_OID = 114
const JSONB_OID = 3802

type Scalar = Extract<Shape, { kind: "scalar" }>

/** The binary reader of a scalar for `target`, or undefined when the value must be rendered as text by the SQL. */
const scalarReader = (shape: Scalar, target: LogicalType): ((capacity: number) => FieldSink) | undefined => {
  const oid = shape.oid
  switch (target.kind) {
    case "string":
      return TEXT_WIRE.has(oid) || shape.isEnum ? passthrough(0, shape.name) : undefined
    case "json":
      return oid === JSON_OID ? passthrough(0, "json") : oid === JSONB_OID ? passthrough(1, "jsonb") : undefined
    case "bytes":
      return oid === 17 ? passthrough(0, "bytea") : undefined
    case "int16":
      return oid === 21 ? swapped("int16", "int2") : undefined
    case "int32":
      return oid === 23 ? swapped("int32", "int4") : oid === 21 ? widened("int32", 2, false, "int2") : undefined
    case "int64":
      if (oid === 20) return swapped("int64", "int8")
      if (oid === 23) return widened("int64", 4, false, "int4")
      if (oid === 21) return widened("int64", 2, false, "int2")
      if (oid === 26) return widened("int64", 4, true, "oid")
      return oid === 1700 ? numericInt64 : undefined
    case "float32":
      return oid === 700 ? swapped("float32", "float4") : undefined
    case "float64":
      if (oid === 701) return swapped("float64", "float8")
      return oid === 700 ? toFloat64("float4") : oid === 23 ? toFloat64("int4") : oid === 21 ? toFloat64("int2") : undefined
    case "decimal":
      if (oid === 1700) return numericDecimal(target.precision, target.scale)
      if (oid === 21 || oid === 23 || oid === 20) {
        return integerDecimal(oid === 21 ? 2 : oid === 23 ? 4 : 8, target.precision, target.scale)
      }
      return undefined
    case "bool":
      return oid === 16 ? bool : undefined
    case "date":
      return oid === 1082 ? date : undefined
    case "time":
      return oid === 1083 ? swapped("int64", "time") : undefined
    case "timestamp":
    case "timestamptz":
      return oid === 1114 || oid === 1184 ? timestamp : undefined
    case "uuid":
      return oid === 2950 ? uuid : undefined
    case "interval":
      return oid === 1186 ? interval : undefined
    case "list":
      return undefined
  }
}

const binaryReader = (shape: Shape, target: LogicalType): ((capacity: number) => FieldSink) | undefined => {
  if (shape.kind === "scalar") return scalarReader(shape, target)
  if (shape.kind === "array" && target.kind === "list") {
    const element = binaryReader(shape.element, target.element)
    return element === undefined ? undefined : list(element)
  }
  return undefined
}

/**
 * How a planned column is read from binary COPY: straight from its wire format when it has one here; otherwise the
 * SELECT renders it with PostgreSQL's output function (exactly today's text) and its bytes are taken as they are
 * (`string`) or through the plan's text decoder (arrays of such elements).
 */
export const fieldReader = (plan: ColumnPlan): FieldReader => {
  const binary = binaryReader(plan.shape, plan.type)
  if (binary !== undefined) return { rendered: false, make: binary }
  if (plan.type.kind === "string" && plan.decode === undefined) return { rendered: true, make: passthrough(0, "text") }
  return { rendered: true, make: decodedText(plan) }
}

/** `column "x" (numeric(12,2) → decimal(12,2)): …` — the failure of one value, as decode.ts callers word it. */
export const columnFailure = (plan: ColumnPlan, cause: unknown): DecodeFailure => {
  const reason = cause instanceof DecodeFailure ? cause.message : cause instanceof Error ? cause.message : String(cause)
  return new DecodeFailure(
    `column "${plan.name}" (${plan.sourceType} → ${formatLogicalType(plan.type)}): ${reason}`,
    cause instanceof DecodeFailure ? cause.hint : undefined
  )
}

