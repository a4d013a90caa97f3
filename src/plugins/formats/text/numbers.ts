import type { ByteOut } from "./out.js"

/**
 * Numbers written as ASCII digits straight into the output. Integers below 2^53 use float arithmetic (exact there);
 * int64 values are read as two 32-bit halves so that no bigint is made for the common case.
 */

const MINUS = 0x2d
const ZERO = 0x30

/** The decimal digits of a non-negative integer below 2^53. */
export const writeUint = (out: ByteOut, n: number): void => {
  let digits = 1
  for (let limit = 10; limit <= n && digits < 16; limit *= 10) digits++
  out.ensure(digits)
  const buf = out.buf
  let i = out.pos + digits
  out.pos = i
  if (n < 2_147_483_648) {
    while (n >= 10) {
      const q = (n / 10) | 0
      buf[--i] = ZERO + n - q * 10
      n = q
    }
  } else {
    while (n >= 10) {
      const q = Math.floor(n / 10)
      buf[--i] = ZERO + n - q * 10
      n = q
    }
  }
  buf[--i] = ZERO + n
}

/** An integer below 2^53 in magnitude, with its sign. */
export const writeInt = (out: ByteOut, n: number): void => {
  if (n < 0) {
    out.byte(MINUS)
    writeUint(out, -n)
  } else writeUint(out, n)
}

/**
 * Row `row` of a BigInt64Array read through an Int32Array view of the same buffer (`halves`): the value as a
 * number when it is below 2^53 in magnitude (exact), `undefined` otherwise.
 */
export const safeInt64 = (halves: Int32Array, row: number): number | undefined => {
  const high = halves[2 * row + 1]!
  // |value| < 2^53 exactly when the high half lies in [-2^21, 2^21).
  if (high < -2_097_152 || high >= 2_097_152) return undefined
  return high * 4_294_967_296 + (halves[2 * row]! >>> 0)
}

/** The Int32Array view over a BigInt64Array's bytes that `safeInt64` reads (little-endian: low half first). */
export const int64Halves = (values: BigInt64Array): Int32Array =>
  new Int32Array(values.buffer, values.byteOffset, values.length * 2)

/** JS shortest round-trip text of a double; `NaN`, `Infinity`, `-Infinity`, and `-0` kept distinct from `0`. */
export { float32Text, float64Text } from "../../../core/columns/float32.js"
