import { BinaryBuilder } from "../../../core/columns/builders.js"
import { writeGroup } from "./binary-numeric.js"
import { badSize, builderSink, type FieldSink, int32At, int64At, writeInteger } from "./binary-wire.js"

/** The binary COPY reader of interval, written as ISO-8601 text. */

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
export const interval = (capacity: number): FieldSink => {
  const builder = new BinaryBuilder(capacity)
  const part = (data: Uint8Array, at: number, value: number, unit: number): number => {
    if (value === 0) return at
    at = writeInteger(data, at, value)
    data[at] = unit
    return at + 1
  }
  return builderSink(builder, (b, at, size) => {
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
  })
}
