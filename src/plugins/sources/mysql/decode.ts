import { BinaryBuilder, BoolBuilder, NumberBuilder } from "../../../core/columns/builders.js"
import type { ColumnData } from "../../../core/columns/data.js"
import type { ColumnPlan } from "./types.js"

/**
 * Decoding of MySQL's text protocol into column builders. Every value arrives as the server's text (binary values
 * as their bytes), read here exactly: integers and decimals digit by digit or as text, dates and times with exact
 * arithmetic (never JS `Date`), floats through JS numbers (MySQL prints them round-trippable; FLOAT is widened to
 * DOUBLE in SQL first, see result.ts).
 */

/** A zero date (`0000-00-00`, a zero month or day): refused unless the source opts into NULL. */
export class ZeroDate extends Error {}

/** A value the text protocol gave that does not parse as its column's type. */
export class BadValue extends Error {}

const MICROS_PER_DAY = 86_400_000_000n

/** Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's days_from_civil). */
const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (month + (month > 2 ? -3 : 9)) + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146_097 + doe - 719_468
}

/** The number written by `length` ASCII digits at `start`, or -1 if any is not a digit. */
const digits = (bytes: Uint8Array, start: number, length: number): number => {
  let value = 0
  for (let i = start; i < start + length; i++) {
    const d = bytes[i]! - 48
    if (d < 0 || d > 9) return -1
    value = value * 10 + d
  }
  return value
}

const text = (bytes: Buffer): string => bytes.toString("latin1")

/** `YYYY-MM-DD` → days since 1970-01-01. */
const parseDate = (bytes: Buffer): number => {
  const year = digits(bytes, 0, 4)
  const month = digits(bytes, 5, 2)
  const day = digits(bytes, 8, 2)
  if (bytes.byteLength < 10 || year < 0 || month < 0 || day < 0 || bytes[4] !== 45 || bytes[7] !== 45) {
    throw new BadValue(`"${text(bytes)}" is not a date`)
  }
  if (month === 0 || day === 0) throw new ZeroDate(text(bytes))
  return daysFromCivil(year, month, day)
}

/** Microseconds in `.ffffff` (1–6 digits) starting at the `.`, or 0 when absent. */
const fractionMicros = (bytes: Buffer, dot: number): number => {
  if (dot >= bytes.byteLength) return 0
  const count = bytes.byteLength - dot - 1
  const value = bytes[dot] === 46 && count >= 1 && count <= 6 ? digits(bytes, dot + 1, count) : -1
  if (value < 0) throw new BadValue(`"${text(bytes)}" has an unreadable fraction of a second`)
  return value * 10 ** (6 - count)
}

/** `YYYY-MM-DD HH:MM:SS[.ffffff]` → microseconds since 1970-01-01T00:00:00. */
const parseDateTime = (bytes: Buffer): bigint => {
  const days = parseDate(bytes)
  const hours = digits(bytes, 11, 2)
  const minutes = digits(bytes, 14, 2)
  const seconds = digits(bytes, 17, 2)
  if (bytes.byteLength < 19 || hours < 0 || minutes < 0 || seconds < 0) {
    throw new BadValue(`"${text(bytes)}" is not a date and time`)
  }
  const micros = ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + fractionMicros(bytes, 19)
  return BigInt(days) * MICROS_PER_DAY + BigInt(micros)
}

/**
 * MySQL TIME (`-838:59:59.000000` … `838:59:59.000000`: a duration, not a time of day) → ISO-8601 duration with a
 * leading sign: `-PT838H59M59S`, `PT1H0M0.5S`, `PT0S`.
 */
export const timeToInterval = (value: string): string => {
  const match = /^(-?)(\d+):(\d{2}):(\d{2})(?:\.(\d{1,6}))?$/.exec(value)
  if (match === null) throw new BadValue(`"${value}" is not a MySQL time`)
  const [, sign, h, m, s, f] = match
  const fractionText = (f ?? "").replace(/0+$/, "")
  const seconds = `${Number(s)}${fractionText === "" ? "" : `.${fractionText}`}`
  const hours = Number(h)
  const minutes = Number(m)
  const zero = hours === 0 && minutes === 0 && seconds === "0"
  if (zero) return "PT0S"
  return `${sign}PT${hours}H${minutes}M${seconds}S`
}

type Builder = NumberBuilder | BoolBuilder | BinaryBuilder

/** One column's builder and its decoder for a batch. */
export interface ColumnDecoder {
  /** Appends one value (null for SQL NULL); throws `ZeroDate` / `BadValue`. */
  readonly append: (bytes: Buffer | null) => void
  /**
   * Appends a value that arrived as a JS string or number rather than the text protocol's bytes (a binary log row
   * image): the same value `append` would give for its text, without making those bytes where the builder takes it
   * as it is.
   */
  readonly appendValue: (value: string | number) => void
  readonly appendNull: () => void
  /** The batch's column; the builder is then reset for the next batch (buffers sized from this one). */
  readonly finish: () => ColumnData
  /** Bytes held so far (for sizing batches by bytes). */
  readonly byteLength: () => number
}

const integerText = (bytes: Buffer): number => {
  const negative = bytes[0] === 45
  const value = digits(bytes, negative ? 1 : 0, bytes.byteLength - (negative ? 1 : 0))
  if (value < 0 || bytes.byteLength === 0) throw new BadValue(`"${text(bytes)}" is not an integer`)
  return negative ? -value : value
}

/** A builder and decoder for one column, reused batch after batch (about `capacity` rows each). */
export const columnDecoder = (plan: ColumnPlan, capacity: number): ColumnDecoder => {
  const make = (
    builder: Builder,
    append: (bytes: Buffer) => void,
    size: () => number,
    direct?: (value: string | number) => void
  ): ColumnDecoder => ({
    append: (bytes) => (bytes === null ? builder.appendNull() : append(bytes)),
    appendValue: direct ?? ((value) => append(Buffer.from(String(value), "latin1"))),
    appendNull: () => builder.appendNull(),
    finish: () => {
      const column = builder.finish()
      builder.reset()
      return column
    },
    byteLength: size
  })
  switch (plan.decode) {
    case "int16":
    case "int32": {
      const builder = new NumberBuilder(plan.decode, capacity)
      const append = (bytes: Buffer) => builder.push(integerText(bytes))
      return make(builder, append, () => builder.length * builder.width, (value) =>
        typeof value === "number" ? builder.push(value) : append(Buffer.from(value, "latin1"))
      )
    }
    case "int64": {
      const builder = new NumberBuilder("int64", capacity)
      return make(builder, (bytes) => builder.pushBigInt(BigInt(text(bytes))), () => builder.length * 8, (value) => builder.pushBigInt(BigInt(value)))
    }
    case "float32":
    case "float64": {
      const builder = new NumberBuilder(plan.decode, capacity)
      return make(builder, (bytes) => builder.push(Number(text(bytes))), () => builder.length * builder.width, (value) => builder.push(Number(value)))
    }
    case "bool": {
      const builder = new BoolBuilder()
      return make(builder, (bytes) => builder.push(!/^-?0*(\.0*)?$/.test(text(bytes))), () => builder.length >>> 3)
    }
    case "date": {
      const builder = new NumberBuilder("int32", capacity)
      return make(builder, (bytes) => builder.push(parseDate(bytes)), () => builder.length * 4)
    }
    case "timestamp":
    case "timestamptz": {
      const builder = new NumberBuilder("int64", capacity)
      return make(builder, (bytes) => builder.pushBigInt(parseDateTime(bytes)), () => builder.length * 8)
    }
    case "time": {
      const builder = new BinaryBuilder(capacity, 16)
      return make(builder, (bytes) => builder.appendString(timeToInterval(text(bytes))), () => builder.end)
    }
    case "text": {
      const builder = new BinaryBuilder(capacity, 16)
      return make(builder, (bytes) => builder.appendBytes(bytes), () => builder.end + builder.length * 4, (value) => builder.appendString(String(value)))
    }
  }
}
