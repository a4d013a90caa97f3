/**
 * Exact decimal text (UTF-8 bytes such as `-12.30`) → unscaled integer at a scale, without a JS string or bigint
 * per value: the digits are accumulated into little-endian 32-bit limbs (two's complement), which Parquet's
 * INT32/INT64/FIXED_LEN_BYTE_ARRAY decimals are written from.
 */

const shortText = (text: string): string => (text.length > 60 ? `${text.slice(0, 57)}...` : text)

const textOf = (data: Uint8Array, start: number, end: number): string => new TextDecoder().decode(data.subarray(start, end))

/**
 * Multiplies the limbs at `out[at…]` by 10 and adds `digit`; false when the value no longer fits. Every step stays
 * below 2^36, exact in a double.
 */
const pushDigit = (out: Uint32Array, at: number, limbs: number, digit: number): boolean => {
  let carry = digit
  for (let l = 0; l < limbs; l++) {
    const next = out[at + l]! * 10 + carry
    out[at + l] = next >>> 0
    carry = Math.floor(next / 4294967296)
  }
  return carry === 0
}

/**
 * Parses `data[start, end)` at `scale` into `limbs` little-endian Uint32 limbs at `out[at…]`, checking that the
 * value has at most `precision` digits. Extra fraction digits are accepted only when they are zeros: anything
 * else would silently round. Returns a message when the text is not a decimal that fits, else undefined.
 */
export const parseDecimal = (
  data: Uint8Array,
  start: number,
  end: number,
  precision: number,
  scale: number,
  out: Uint32Array,
  at: number,
  limbs: number
): string | undefined => {
  const first = start < end ? data[start]! : 0
  const negative = first === 45
  let i = negative || first === 43 ? start + 1 : start
  for (let l = 0; l < limbs; l++) out[at + l] = 0
  let significant = 0
  let fraction = -1
  let digits = 0
  for (; i < end; i++) {
    const code = data[i]!
    if (code === 46 && fraction < 0) {
      fraction = 0
      continue
    }
    if (code < 48 || code > 57) return `expected decimal text such as -12.30, got ${JSON.stringify(shortText(textOf(data, start, end)))}`
    digits++
    if (fraction >= 0) {
      if (fraction >= scale) {
        if (code !== 48) {
          return `${shortText(textOf(data, start, end))} has more than ${scale} fraction digits, which decimal(${precision},${scale}) cannot hold exactly`
        }
        continue
      }
      fraction++
    } else if (significant === 0 && code === 48) {
      continue
    } else {
      significant++
      if (significant + scale > precision) break
    }
    if (!pushDigit(out, at, limbs, code - 48)) return tooWide(data, start, end, precision, scale)
  }
  if (digits === 0) return `expected decimal text such as -12.30, got ${JSON.stringify(shortText(textOf(data, start, end)))}`
  if (significant + scale > precision) return tooWide(data, start, end, precision, scale)
  for (let pad = Math.max(fraction, 0); pad < scale; pad++) if (!pushDigit(out, at, limbs, 0)) return tooWide(data, start, end, precision, scale)
  if (negative) {
    let carry = 1
    for (let l = 0; l < limbs; l++) {
      const next = (~out[at + l]! >>> 0) + carry
      out[at + l] = next >>> 0
      carry = next > 0xffffffff ? 1 : 0
    }
  }
  return undefined
}

const tooWide = (data: Uint8Array, start: number, end: number, precision: number, scale: number): string =>
  `${shortText(textOf(data, start, end))} does not fit decimal(${precision},${scale}) (at most ${precision - scale} integer digits)`

/** Limbs needed for a decimal of `precision` digits written in `byteLength` bytes. */
export const limbCount = (byteLength: number): number => Math.max(2, Math.ceil(byteLength / 4))

/** Writes the low `byteLength` bytes of the limbs at `out[at…]` big-endian (Parquet's FIXED_LEN_BYTE_ARRAY decimal). */
export const limbsToBigEndian = (limbs: Uint32Array, at: number, target: Uint8Array, offset: number, byteLength: number): void => {
  for (let b = 0; b < byteLength; b++) {
    const limb = limbs[at + (b >>> 2)]!
    target[offset + byteLength - 1 - b] = (limb >>> ((b & 3) * 8)) & 0xff
  }
}
