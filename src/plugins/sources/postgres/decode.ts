import type { Value } from "../../../core/batch.js"

/**
 * Text → value decoders for PostgreSQL's text output format. The session runs with `DateStyle=ISO`,
 * `IntervalStyle=iso_8601`, `TimeZone=UTC`, `bytea_output=hex` and `extra_float_digits=3`, so every value arrives
 * in one canonical spelling and these decoders can stay small: `charCodeAt` walks, no regexes, no `Date`.
 * A decoder throws `DecodeFailure` for a value it cannot represent; the caller adds the column name.
 */
export type Decoder = (text: string) => Value

/** A value the target type cannot hold. Internal: always caught and turned into a `SourceError`. */
export class DecodeFailure extends Error {
  constructor(
    message: string,
    readonly hint?: string
  ) {
    super(message)
  }
}

export const decodeNumber: Decoder = (text) => +text
export const decodeBigInt: Decoder = (text) => BigInt(text)
export const decodeBool: Decoder = (text) => text === "t"

/** `\x00ff` → bytes, in a fresh (non-pooled) buffer so consumers may keep or transfer it. */
export const decodeBytea: Decoder = (text) => {
  if (text.charCodeAt(1) !== 120) throw new DecodeFailure("bytea value is not in hex format")
  const bytes = new Uint8Array((text.length - 2) >>> 1)
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.length).write(text.slice(2), "hex")
  return bytes
}

const digits = (text: string, from: number, to: number): number => {
  let n = 0
  for (let i = from; i < to; i++) {
    const d = text.charCodeAt(i) - 48
    if (d < 0 || d > 9) throw new DecodeFailure(`unexpected date/time text ${JSON.stringify(text)}`)
    n = n * 10 + d
  }
  return n
}

/** Days since 1970-01-01 of a proleptic Gregorian date (astronomical years: 1 BC is year 0). */
const daysFromCivil = (year: number, month: number, day: number): number => {
  const y = month <= 2 ? year - 1 : year
  const era = Math.floor(y / 400)
  const yoe = y - era * 400
  const doy = Math.floor((153 * (month > 2 ? month - 3 : month + 9) + 2) / 5) + day - 1
  const doe = yoe * 365 + Math.floor(yoe / 4) - Math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
}

const rejectInfinity = (text: string): void => {
  const c = text.charCodeAt(0)
  if (c === 105 || c === 45) {
    throw new DecodeFailure(
      `value ${text} has no representation outside PostgreSQL`,
      "filter it out or replace it in SQL, e.g. NULLIF(col, 'infinity')"
    )
  }
}

// Secondary results of parseDate/parseClock, kept in module state rather than a tuple allocated per value.
// Safe because decoders are synchronous and never re-entered.
let parsedEnd = 0
let parsedMicros = 0

/** Parses `YYYY-MM-DD` (year may be longer; ` BC` suffix handled by the caller) into days; sets `parsedEnd`. */
const parseDate = (text: string, bc: boolean): number => {
  const dash = text.indexOf("-", 4)
  let year = digits(text, 0, dash)
  if (bc) year = 1 - year
  const month = digits(text, dash + 1, dash + 3)
  const day = digits(text, dash + 4, dash + 6)
  parsedEnd = dash + 6
  return daysFromCivil(year, month, day)
}

const isBC = (text: string): boolean => text.charCodeAt(text.length - 1) === 67 && text.endsWith(" BC")

/** `2024-02-29` → days since the epoch. */
export const decodeDate: Decoder = (text) => {
  rejectInfinity(text)
  return parseDate(text, isBC(text))
}

/** Parses `HH:MM:SS[.ffffff]` from `at` into whole seconds; sets `parsedMicros` (the fraction) and `parsedEnd`. */
const parseClock = (text: string, at: number): number => {
  const seconds = digits(text, at, at + 2) * 3600 + digits(text, at + 3, at + 5) * 60 + digits(text, at + 6, at + 8)
  let i = at + 8
  let micros = 0
  if (text.charCodeAt(i) === 46) {
    const start = ++i
    while (i < text.length && i - start < 6) {
      const d = text.charCodeAt(i) - 48
      if (d < 0 || d > 9) break
      micros = micros * 10 + d
      i++
    }
    for (let k = i - start; k < 6; k++) micros *= 10
  }
  parsedMicros = micros
  parsedEnd = i
  return seconds
}

/** `23:59:59.999999` → microseconds since midnight. */
export const decodeTime: Decoder = (text) => {
  const seconds = parseClock(text, 0)
  return BigInt(seconds * 1_000_000 + parsedMicros)
}

// Below 2^53 µs the arithmetic is exact in doubles; beyond (after year ~2255) go through bigint.
const SAFE_SECONDS = 9_000_000_000

const INT64_MAX = 9_223_372_036_854_775_807n
const INT64_MIN = -9_223_372_036_854_775_808n

const toMicros = (seconds: number, micros: number): bigint => {
  if (Math.abs(seconds) < SAFE_SECONDS) return BigInt(seconds * 1_000_000 + micros)
  const value = BigInt(seconds) * 1_000_000n + BigInt(micros)
  // PostgreSQL counts from 2000: its last ~30 years (after 294247-01-10) overflow 64-bit microseconds since 1970.
  if (value > INT64_MAX || value < INT64_MIN) throw new DecodeFailure("timestamp is beyond 64-bit microseconds since 1970")
  return value
}

const parseTimestamp = (text: string): bigint => {
  rejectInfinity(text)
  const days = parseDate(text, isBC(text))
  let seconds = days * 86400 + parseClock(text, parsedEnd + 1)
  const micros = parsedMicros
  const i = parsedEnd
  const sign = text.charCodeAt(i)
  if (sign === 43 || sign === 45) {
    // A zone offset `+HH[:MM[:SS]]`: always `+00` under TimeZone=UTC, parsed anyway to stay correct.
    let offset = digits(text, i + 1, i + 3) * 3600
    if (text.charCodeAt(i + 3) === 58) offset += digits(text, i + 4, i + 6) * 60
    if (text.charCodeAt(i + 6) === 58) offset += digits(text, i + 7, i + 9)
    seconds -= sign === 43 ? offset : -offset
  }
  return toMicros(seconds, micros)
}

/** `2024-01-01 12:00:00.123456` → microseconds since 1970-01-01T00:00:00 (no zone). */
export const decodeTimestamp: Decoder = parseTimestamp

/** `2024-01-01 12:00:00.123456+00` → microseconds since the Unix epoch, UTC. */
export const decodeTimestamptz: Decoder = parseTimestamp

/**
 * A decoder producing exact decimal text with exactly `scale` fractional digits, for `decimal(precision,scale)`.
 * Pads with zeros; drops extra fractional digits only when they are zeros — never rounds. Works on numeric text
 * and on integer text (for integer columns overridden to a decimal).
 */
export const makeDecimalDecoder = (precision: number, scale: number): Decoder => {
  const maxIntegerDigits = precision - scale
  return (text) => {
    const first = text.charCodeAt(0)
    const negative = first === 45
    const lead = text.charCodeAt(negative ? 1 : 0)
    if (lead < 48 || lead > 57) {
      throw new DecodeFailure(
        `value ${text} has no decimal representation`,
        "filter it out or replace it in SQL, e.g. NULLIF(col, 'NaN')"
      )
    }
    const dot = text.indexOf(".")
    const integerEnd = dot < 0 ? text.length : dot
    const integerStart = negative ? 1 : 0
    let integerDigits = integerEnd - integerStart
    if (integerDigits === 1 && lead === 48) integerDigits = 0
    if (integerDigits > maxIntegerDigits) {
      throw new DecodeFailure(
        `value ${text} does not fit decimal(${precision},${scale})`,
        "raise the precision in the column's type override"
      )
    }
    const fraction = dot < 0 ? 0 : text.length - dot - 1
    if (fraction === scale) return text
    if (fraction < scale) return (dot < 0 ? text + "." : text) + "0".repeat(scale - fraction)
    for (let i = dot + 1 + scale; i < text.length; i++) {
      if (text.charCodeAt(i) !== 48) {
        throw new DecodeFailure(
          `value ${text} has more than ${scale} fractional digits; Rivet never rounds`,
          "raise the scale in the column's type override, or round explicitly in SQL"
        )
      }
    }
    const cut = text.slice(0, scale === 0 ? dot : dot + 1 + scale)
    return cut === "-0" ? "0" : cut
  }
}

// Precision high enough for any numeric: the int64 range check below is the real limit.
const toInteger = makeDecimalDecoder(1_000_000, 0)

/** `12.00` → `12n`; fails on a non-zero fraction or outside the int64 range (numeric → int64 override). */
export const decodeIntegralBigInt: Decoder = (text) => {
  const value = BigInt(toInteger(text) as string)
  if (value > INT64_MAX || value < INT64_MIN) throw new DecodeFailure(`value ${text} does not fit int64`)
  return value
}
