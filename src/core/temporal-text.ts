/**
 * Text for dates, times and timestamps in the representations `batch.ts` defines — exact, never through JS `Date`
 * (millisecond precision, ±275760-year range): days and microseconds are split with exact arithmetic and the
 * calendar date comes from the proleptic Gregorian "civil from days" algorithm (H. Hinnant). Years 0000–9999 have
 * four digits; other years use the ISO 8601 expanded form (`+10000-01-01`, `-0001-12-31`). Year 0 is 1 BC.
 * Used by the text formats and by the runtime for cursor and key values.
 */

const MICROS_PER_SECOND = 1_000_000
const MICROS_PER_DAY = 86_400_000_000
const MICROS_PER_DAY_BIG = 86_400_000_000n

const TWO_DIGITS: ReadonlyArray<string> = Array.from({ length: 100 }, (_, i) => (i < 10 ? `0${i}` : `${i}`))

const pad2 = (n: number): string => TWO_DIGITS[n] ?? `${n}`

const pad6 = (n: number): string => `${1_000_000 + n}`.slice(1)

const renderYear = (year: number): string => {
  if (year >= 0 && year <= 9999) return `${10_000 + year}`.slice(1)
  const digits = `${Math.abs(year)}`.padStart(4, "0")
  return year < 0 ? `-${digits}` : `+${digits}`
}

/** `YYYY-MM-DD` for a count of days since 1970-01-01. */
export const renderDate = (days: number): string => {
  const z = days + 719_468
  const era = Math.floor(z / 146_097)
  const doe = z - era * 146_097
  const yoe = Math.floor((doe - Math.floor(doe / 1460) + Math.floor(doe / 36_524) - Math.floor(doe / 146_096)) / 365)
  const doy = doe - (365 * yoe + Math.floor(yoe / 4) - Math.floor(yoe / 100))
  const mp = Math.floor((5 * doy + 2) / 153)
  const day = doy - Math.floor((153 * mp + 2) / 5) + 1
  const month = mp < 10 ? mp + 3 : mp - 9
  const year = yoe + era * 400 + (month <= 2 ? 1 : 0)
  return `${renderYear(year)}-${pad2(month)}-${pad2(day)}`
}

/** `HH:MM:SS.ffffff` for microseconds since midnight (a number below 2^53). Negative values get a `-` sign. */
const renderClock = (micros: number): string => {
  if (micros < 0) return `-${renderClock(-micros)}`
  const seconds = Math.floor(micros / MICROS_PER_SECOND)
  const fraction = micros - seconds * MICROS_PER_SECOND
  const hours = Math.floor(seconds / 3600)
  const rest = seconds - hours * 3600
  const minutes = Math.floor(rest / 60)
  return `${pad2(hours)}:${pad2(minutes)}:${pad2(rest - minutes * 60)}.${pad6(fraction)}`
}

/** `HH:MM:SS.ffffff` for a time of day in microseconds since midnight (PostgreSQL's `24:00:00` included). */
export const renderTime = (micros: bigint): string => renderClock(Number(micros))

// Consecutive timestamps usually fall on the same day: remember the last date rendered.
let lastDays = Number.NaN
let lastDate = ""

const dateOf = (days: number): string => {
  if (days !== lastDays) {
    lastDate = renderDate(days)
    lastDays = days
  }
  return lastDate
}

/**
 * The day (since 1970-01-01, floored) of a count of microseconds: as a number when it is exact as one (within
 * ±2^53 µs, 1685–2255), else as a bigint, divided exactly.
 */
export const dayOfMicros = (micros: number | bigint): number => {
  if (typeof micros === "bigint") {
    const days = micros / MICROS_PER_DAY_BIG
    return Number(micros - days * MICROS_PER_DAY_BIG < 0n ? days - 1n : days)
  }
  const days = Math.floor(micros / MICROS_PER_DAY)
  // The float division may round across a day boundary; the remainder tells.
  const rest = micros - days * MICROS_PER_DAY
  return rest < 0 ? days - 1 : rest >= MICROS_PER_DAY ? days + 1 : days
}

/** The microseconds of `micros` since the start of its day `days` (see {@link dayOfMicros}). */
export const microsIntoDay = (micros: number | bigint, days: number): number =>
  typeof micros === "bigint" ? Number(micros - BigInt(days) * MICROS_PER_DAY_BIG) : micros - days * MICROS_PER_DAY

/** `YYYY-MM-DDTHH:MM:SS.ffffff` for microseconds since 1970-01-01T00:00:00. */
export const renderTimestamp = (micros: bigint): string => {
  const n = Number(micros)
  const exact = Number.isSafeInteger(n) ? n : micros
  const days = dayOfMicros(exact)
  return `${dateOf(days)}T${renderClock(microsIntoDay(exact, days))}`
}

/** Same as {@link renderTimestamp} with a `Z` suffix: the instant in UTC. */
export const renderTimestamptz = (micros: bigint): string => `${renderTimestamp(micros)}Z`
