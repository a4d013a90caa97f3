import { dayOfMicros, microsIntoDay } from "../../../core/temporal-text.js"
import { safeInt64, writeUint } from "./numbers.js"
import type { ByteOut } from "./out.js"

/**
 * Dates, times and timestamps written as bytes, with the same text as `src/core/temporal-text.ts` (which the
 * runtime keeps for cursor and key values): proleptic Gregorian, years 0000–9999 in four digits, other years in
 * ISO 8601 expanded form (`+10000`, `-0001`), times `HH:MM:SS.ffffff`.
 */

const MICROS_PER_SECOND = 1_000_000
const ZERO = 0x30
const MINUS = 0x2d
const PLUS = 0x2b
const COLON = 0x3a
const DOT = 0x2e
const T = 0x54

const put2 = (buf: Uint8Array, at: number, n: number): void => {
  const tens = (n / 10) | 0
  buf[at] = ZERO + tens
  buf[at + 1] = ZERO + n - tens * 10
}

const writeYear = (out: ByteOut, year: number): void => {
  if (year >= 0 && year <= 9999) {
    out.ensure(4)
    const buf = out.buf
    const at = out.pos
    put2(buf, at, (year / 100) | 0)
    put2(buf, at + 2, year % 100)
    out.pos += 4
    return
  }
  const magnitude = Math.abs(year)
  out.byte(year < 0 ? MINUS : PLUS)
  for (let limit = 1000; limit > 1 && magnitude < limit; limit /= 10) out.byte(ZERO)
  writeUint(out, magnitude)
}

/** `YYYY-MM-DD` for a count of days since 1970-01-01 ("civil from days", H. Hinnant). */
export const writeDate = (out: ByteOut, days: number): void => {
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  writeYear(out, yoe + era * 400 + (month <= 2 ? 1 : 0))
  out.ensure(6)
  const buf = out.buf
  const at = out.pos
  buf[at] = MINUS
  put2(buf, at + 1, month)
  buf[at + 3] = MINUS
  put2(buf, at + 4, day)
  out.pos += 6
}

/** `HH:MM:SS.ffffff` for microseconds (a number below 2^53); a negative value gets a `-` sign. */
export const writeClock = (out: ByteOut, micros: number): void => {
  if (micros < 0) {
    out.byte(MINUS)
    micros = -micros
  }
  const seconds = Math.floor(micros / MICROS_PER_SECOND)
  const fraction = micros - seconds * MICROS_PER_SECOND
  const hours = Math.floor(seconds / 3600)
  const rest = seconds - hours * 3600
  const minutes = Math.floor(rest / 60)
  if (hours < 100) {
    out.ensure(2)
    put2(out.buf, out.pos, hours)
    out.pos += 2
  } else writeUint(out, hours)
  out.ensure(13)
  const buf = out.buf
  const at = out.pos
  buf[at] = COLON
  put2(buf, at + 1, minutes)
  buf[at + 3] = COLON
  put2(buf, at + 4, rest - minutes * 60)
  buf[at + 6] = DOT
  let f = fraction
  for (let i = at + 12; i > at + 6; i--) {
    const q = (f / 10) | 0
    buf[i] = ZERO + f - q * 10
    f = q
  }
  out.pos += 13
}

/**
 * Renders timestamps, remembering the date bytes of the last day written (consecutive timestamps usually fall
 * on the same day). One per encoder.
 */
export class TimestampWriter {
  private lastDays = Number.NaN
  private readonly date = new Uint8Array(16)
  private dateLength = 0

  /** `YYYY-MM-DDTHH:MM:SS.ffffff` for row `row` of µs since 1970-01-01T00:00:00 (`halves`: see `int64Halves`). */
  write(out: ByteOut, values: BigInt64Array, halves: Int32Array, row: number): void {
    // Only a value beyond ±2^53 µs (before 1685 or after 2255) is read as a bigint.
    const micros = safeInt64(halves, row) ?? values[row]!
    const days = dayOfMicros(micros)
    const timeOfDay = microsIntoDay(micros, days)
    if (days !== this.lastDays) {
      const start = out.pos
      writeDate(out, days)
      this.dateLength = out.pos - start
      this.date.set(out.buf.subarray(start, out.pos))
      this.lastDays = days
    } else {
      out.copy(this.date, 0, this.dateLength)
    }
    out.byte(T)
    writeClock(out, timeOfDay)
  }
}
