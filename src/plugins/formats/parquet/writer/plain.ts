import type { ColumnData } from "../../../../core/columns/data.js"
import { limbsToBigEndian } from "../decimal.js"
import type { ByteBuffer } from "./bytes.js"

/**
 * PLAIN encoding of a leaf column's values `[from, to)`, NULL slots skipped (levels carry them). Fixed-width
 * values are copied from the typed arrays run by run; decimals come from the unscaled limbs `prepareColumn`
 * parsed (`limbs` words per value).
 */
export type PlainEncoder = (out: ByteBuffer, data: ColumnData, words: Uint32Array | undefined, from: number, to: number) => void

/** Calls `run(a, b)` for each maximal run `[a, b)` of non-NULL values in `[from, to)`. */
export const forEachValidRun = (data: ColumnData, from: number, to: number, run: (a: number, b: number) => void): void => {
  const validity = data.validity
  if (validity === undefined) {
    if (from < to) run(from, to)
    return
  }
  let start = -1
  for (let i = from; i < to; i++) {
    if ((validity[i >>> 3]! & (1 << (i & 7))) !== 0) {
      if (start < 0) start = i
    } else if (start >= 0) {
      run(start, i)
      start = -1
    }
  }
  if (start >= 0) run(start, to)
}

const isValidAt = (validity: Uint8Array | undefined, i: number): boolean =>
  validity === undefined || (validity[i >>> 3]! & (1 << (i & 7))) !== 0

const layoutError = (expected: string, data: ColumnData): Error =>
  new Error(`a Parquet ${expected} column arrived with the ${data.layout} layout`)

/** Typed-array values copied byte for byte (x86 and ARM are little-endian, as Parquet is). */
export const plainTyped = (width: 4 | 8): PlainEncoder => (out, data, _words, from, to) => {
  if (data.layout !== "int32" && data.layout !== "int64" && data.layout !== "float32" && data.layout !== "float64") {
    throw layoutError(`${width * 8}-bit`, data)
  }
  const values = data.values
  forEachValidRun(data, from, to, (a, b) => out.append(new Uint8Array(values.buffer, values.byteOffset + a * width, (b - a) * width)))
}

/** int16 values widened to Parquet's INT32. */
export const plainInt16: PlainEncoder = (out, data, _words, from, to) => {
  if (data.layout !== "int16") throw layoutError("int16", data)
  const values = data.values
  const validity = data.validity
  for (let i = from; i < to; i++) if (isValidAt(validity, i)) out.i32(values[i]!)
}

/**
 * Booleans, one byte (0 or 1) per value: a page's values come from several ranges, and PLAIN packs them 8 to a
 * byte across range boundaries, so `packBooleans` packs the page's bytes once they are all in.
 */
export const plainBool: PlainEncoder = (out, data, _words, from, to) => {
  if (data.layout !== "bool") throw layoutError("bool", data)
  const values = data.values
  const validity = data.validity
  out.reserve(to - from)
  for (let i = from; i < to; i++) if (isValidAt(validity, i)) out.bytes[out.length++] = (values[i >>> 3]! >>> (i & 7)) & 1
}

/** Packs one-byte booleans in place, LSB first: PLAIN's BOOLEAN layout. */
export const packBooleans = (buffer: ByteBuffer): void => {
  const bytes = buffer.bytes
  const count = buffer.length
  for (let byte = 0; byte * 8 < count; byte++) {
    let packed = 0
    for (let bit = 0; bit < 8 && byte * 8 + bit < count; bit++) packed |= bytes[byte * 8 + bit]! << bit
    bytes[byte] = packed
  }
  buffer.length = Math.ceil(count / 8)
}

export const plainFixed: PlainEncoder = (out, data, _words, from, to) => {
  if (data.layout !== "fixed") throw layoutError("fixed-width", data)
  const { data: bytes, width } = data
  forEachValidRun(data, from, to, (a, b) => out.appendRange(bytes, a * width, b * width))
}

/** BYTE_ARRAY: a 4-byte length, then the bytes, per value. */
export const plainBinary: PlainEncoder = (out, data, _words, from, to) => {
  if (data.layout !== "binary") throw layoutError("byte-array", data)
  const { offsets, data: source, validity } = data
  out.reserve((to - from) * 4 + offsets[to]! - offsets[from]!)
  const bytes = out.bytes
  let at = out.length
  for (let i = from; i < to; i++) {
    if (!isValidAt(validity, i)) continue
    const start = offsets[i]!
    const end = offsets[i + 1]!
    const length = end - start
    bytes[at] = length & 0xff
    bytes[at + 1] = (length >>> 8) & 0xff
    bytes[at + 2] = (length >>> 16) & 0xff
    bytes[at + 3] = length >>> 24
    at += 4
    if (length < 32) {
      for (let b = start; b < end; b++) bytes[at++] = source[b]!
    } else {
      bytes.set(source.subarray(start, end), at)
      at += length
    }
  }
  out.length = at
}

/** Decimals of precision ≤ 9 (INT32) or ≤ 18 (INT64) from their low limbs; wider ones big-endian in `width` bytes. */
export const plainDecimal = (physicalWidth: number, limbs: number, fixed: boolean): PlainEncoder => (out, data, words, from, to) => {
  if (words === undefined) throw new Error("a decimal column was not prepared")
  const validity = data.validity
  for (let i = from; i < to; i++) {
    if (!isValidAt(validity, i)) continue
    const at = i * limbs
    if (fixed) {
      out.reserve(physicalWidth)
      limbsToBigEndian(words, at, out.bytes, out.length, physicalWidth)
      out.length += physicalWidth
    } else {
      out.u32(words[at]!)
      if (physicalWidth === 8) out.u32(words[at + 1]!)
    }
  }
}
