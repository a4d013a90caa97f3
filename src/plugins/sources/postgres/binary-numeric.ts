import { BinaryBuilder, NumberBuilder } from "../../../core/columns/builders.js"
import { DecodeFailure, decodeIntegralBigInt } from "./decode.js"
import { badSize, builderSink, type FieldSink, int16At, int32At, int64At, uint16At } from "./binary-wire.js"

/** numeric and the decimal overrides: base-10000 digit groups written as exact decimal text, never rounded. */

// numeric's sign word.
const NUMERIC_NEG = 0x4000
const NUMERIC_NAN = 0xc000
const NUMERIC_PINF = 0xd000
const NUMERIC_NINF = 0xf000

/** The text PostgreSQL's numeric_out gives for a binary numeric — for error messages only (one string). */
export const numericText = (b: Uint8Array, at: number): string => {
  const ndigits = int16At(b, at)
  const weight = int16At(b, at + 2)
  const sign = uint16At(b, at + 4)
  const dscale = uint16At(b, at + 6)
  if (sign === NUMERIC_NAN) return "NaN"
  if (sign === NUMERIC_PINF) return "Infinity"
  if (sign === NUMERIC_NINF) return "-Infinity"
  const digit = (i: number) => (i >= 0 && i < ndigits ? uint16At(b, at + 8 + 2 * i) : 0)
  let text = sign === NUMERIC_NEG ? "-" : ""
  if (weight < 0) text += "0"
  else for (let i = 0; i <= weight; i++) text += i === 0 ? String(digit(0)) : String(digit(i)).padStart(4, "0")
  if (dscale > 0) {
    let fraction = ""
    for (let i = weight + 1; fraction.length < dscale; i++) fraction += String(digit(i)).padStart(4, "0")
    text += "." + fraction.slice(0, dscale)
  }
  return text
}

const NO_DECIMAL_HINT = "filter it out or replace it in SQL, e.g. NULLIF(col, 'NaN')"

const POW10 = [1, 10, 100, 1000, 10000]

/** Decimal digits of a base-10000 group (1..4; 0 for 0). */
const groupDigits = (group: number): number => (group >= 1000 ? 4 : group >= 100 ? 3 : group >= 10 ? 2 : group >= 1 ? 1 : 0)

/** Writes the last `digits` decimal digits of `group` (zero-padded) at `data[at…]`, returns the end. */
export const writeGroup = (data: Uint8Array, at: number, group: number, digits: number): number => {
  for (let k = digits - 1; k >= 0; k--) {
    data[at + k] = 48 + (group % 10)
    group = Math.floor(group / 10)
  }
  return at + digits
}

/**
 * numeric → exact `decimal(precision,scale)` text with exactly `scale` fractional digits, written as ASCII into the
 * builder: zeros padded, extra fractional digits allowed only when they are zeros (never rounds), at most
 * `precision - scale` integer digits. NaN and ±Infinity fail. Same rules and messages as `makeDecimalDecoder`.
 */
export const numericDecimal = (precision: number, scale: number) => (capacity: number): FieldSink => {
  const builder = new BinaryBuilder(capacity)
  const maxIntegerDigits = precision - scale
  return builderSink(builder, (b, at, size) => {
    if (size < 8) throw badSize("numeric", size)
    const ndigits = int16At(b, at)
    const weight = int16At(b, at + 2)
    const sign = uint16At(b, at + 4)
    if (size !== 8 + 2 * ndigits) throw badSize("numeric", size)
    if (sign === NUMERIC_NAN || sign === NUMERIC_PINF || sign === NUMERIC_NINF) {
      throw new DecodeFailure(`value ${numericText(b, at)} has no decimal representation`, NO_DECIMAL_HINT)
    }
    const first = at + 8
    let nonZero = false
    for (let i = 0; i < ndigits; i++) if (b[first + 2 * i] !== 0 || b[first + 2 * i + 1] !== 0) nonZero = true
    // Integer digits: groups 0..weight, the first without leading zeros.
    let integerDigits = 0
    if (weight >= 0 && nonZero) {
      let i = 0
      while (i <= weight && (i >= ndigits || uint16At(b, first + 2 * i) === 0)) i++
      if (i <= weight) integerDigits = groupDigits(uint16At(b, first + 2 * i)) + 4 * (weight - i)
    }
    if (integerDigits > maxIntegerDigits) {
      throw new DecodeFailure(
        `value ${numericText(b, at)} does not fit decimal(${precision},${scale})`,
        "raise the precision in the column's type override"
      )
    }
    // Fractional digits past `scale` must be zeros: group i holds positions (i - weight - 1) * 4 … + 3.
    for (let i = Math.max(0, weight + 1); i < ndigits; i++) {
      const group = uint16At(b, first + 2 * i)
      if (group === 0) continue
      const start = (i - weight - 1) * 4
      const keep = scale - start
      if (keep >= 4) continue
      if (keep <= 0 || group % POW10[4 - keep]! !== 0) {
        throw new DecodeFailure(
          `value ${numericText(b, at)} has more than ${scale} fractional digits; Rivet never rounds`,
          "raise the scale in the column's type override, or round explicitly in SQL"
        )
      }
    }
    builder.reserve(integerDigits + scale + 3)
    const data = builder.data
    let out = builder.end
    if (sign === NUMERIC_NEG && nonZero) data[out++] = 45
    if (integerDigits === 0) data[out++] = 48
    else {
      let i = 0
      while (uint16At(b, first + 2 * i) === 0) i++
      for (let leading = true; i <= weight; i++, leading = false) {
        const group = i < ndigits ? uint16At(b, first + 2 * i) : 0
        out = writeGroup(data, out, group, leading ? groupDigits(group) : 4)
      }
    }
    if (scale > 0) {
      data[out++] = 46
      for (let k = 0; k < scale; k += 4) {
        const i = weight + 1 + k / 4
        const group = i >= 0 && i < ndigits ? uint16At(b, first + 2 * i) : 0
        const digits = Math.min(4, scale - k)
        out = writeGroup(data, out, Math.floor(group / POW10[4 - digits]!), digits)
      }
    }
    builder.commit(out - builder.end)
  })
}

/** int2/4/8 → `decimal(precision,scale)` (the override): the integer's digits, then `scale` zeros. */
export const integerDecimal = (width: 2 | 4 | 8, precision: number, scale: number) => (capacity: number): FieldSink => {
  const builder = new BinaryBuilder(capacity)
  const maxIntegerDigits = precision - scale
  const zeros = scale > 0 ? "." + "0".repeat(scale) : ""
  return builderSink(builder, (b, at, size) => {
    if (size !== width) throw badSize(`int${width}`, size)
    const value = width === 2 ? int16At(b, at) : width === 4 ? int32At(b, at) : int64At(b, at)
    const text = String(value)
    const digits = value === 0 || value === 0n ? 0 : text.length - (text.charCodeAt(0) === 45 ? 1 : 0)
    if (digits > maxIntegerDigits) {
      throw new DecodeFailure(
        `value ${text} does not fit decimal(${precision},${scale})`,
        "raise the precision in the column's type override"
      )
    }
    builder.appendString(text + zeros)
  })
}

/** numeric → int64 (the override): must be integral and fit 64 bits. */
export const numericInt64 = (capacity: number): FieldSink => {
  const builder = new NumberBuilder("int64", capacity)
  return builderSink(builder, (b, at, size) => {
    if (size < 8) throw badSize("numeric", size)
    builder.pushBigInt(decodeIntegralBigInt(numericText(b, at)) as bigint)
  })
}

