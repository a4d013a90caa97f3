import type { ColumnData } from "../../../../core/columns/data.js"
import { limbsToBigEndian } from "../decimal.js"

/**
 * Min and max of a column chunk's values, accumulated over its leaf ranges (NULLs skipped) and returned as the
 * physical type's plain bytes, ordered as the logical type orders them: signed for integers and decimals,
 * unsigned bytewise for strings, bytes and UUIDs, NaN ignored for floats (-0 as min, +0 as max, as the spec asks).
 */
export interface Bounds {
  readonly min?: Uint8Array
  readonly max?: Uint8Array
  /** False when `min` / `max` was shortened (see `BOUND_BYTES`): still a lower / upper bound, not a value. */
  readonly minExact?: boolean
  readonly maxExact?: boolean
}

export interface MinMax {
  add(data: ColumnData, words: Uint32Array | undefined, from: number, to: number): void
  result(): Bounds
}

/** Text and byte bounds are cut to this many bytes: long values would bloat the footer and prune no better. */
export const BOUND_BYTES = 16

/**
 * Shortened bounds: the min's prefix (still ≤ every value), and for the max the prefix with its last byte below
 * 0xff incremented (still ≥ every value). A max made only of 0xff bytes stays whole.
 */
const shortened = (min: Uint8Array, max: Uint8Array): Bounds => {
  const bounds: Bounds = min.length > BOUND_BYTES ? { min: min.slice(0, BOUND_BYTES), minExact: false } : { min }
  if (max.length <= BOUND_BYTES) return { ...bounds, max }
  for (let last = BOUND_BYTES - 1; last >= 0; last--) {
    if (max[last]! < 0xff) {
      const upper = max.slice(0, last + 1)
      upper[last]! += 1
      return { ...bounds, max: upper, maxExact: false }
    }
  }
  return { ...bounds, max }
}

const valid = (validity: Uint8Array | undefined, i: number): boolean =>
  validity === undefined || (validity[i >>> 3]! & (1 << (i & 7))) !== 0

const int32Bytes = (value: number): Uint8Array => new Uint8Array(Int32Array.of(value).buffer)

/** INT32 values: int16/int32 layouts, or decimals of precision ≤ 9 from their low limb. */
export const int32MinMax = (limbs: number | undefined): MinMax => {
  let min = Number.POSITIVE_INFINITY
  let max = Number.NEGATIVE_INFINITY
  return {
    add: (data, words, from, to) => {
      const validity = data.validity
      if (limbs !== undefined) {
        for (let i = from; i < to; i++) {
          if (!valid(validity, i)) continue
          const value = words![i * limbs]! | 0
          if (value < min) min = value
          if (value > max) max = value
        }
        return
      }
      if (data.layout !== "int16" && data.layout !== "int32") throw new Error(`INT32 statistics of a ${data.layout} column`)
      const values = data.values
      for (let i = from; i < to; i++) {
        if (!valid(validity, i)) continue
        const value = values[i]!
        if (value < min) min = value
        if (value > max) max = value
      }
    },
    result: () => (min > max ? {} : { min: int32Bytes(min), max: int32Bytes(max) })
  }
}

/** INT64 values compared as (signed high word, unsigned low word) pairs, without a bigint per value. */
export const int64MinMax = (limbs: number | undefined): MinMax => {
  let minHigh = 0
  let minLow = 0
  let maxHigh = 0
  let maxLow = 0
  let seen = false
  const consider = (high: number, low: number) => {
    if (!seen) {
      minHigh = maxHigh = high
      minLow = maxLow = low
      seen = true
      return
    }
    if (high < minHigh || (high === minHigh && low < minLow)) {
      minHigh = high
      minLow = low
    }
    if (high > maxHigh || (high === maxHigh && low > maxLow)) {
      maxHigh = high
      maxLow = low
    }
  }
  const bytes = (high: number, low: number) => new Uint8Array(Uint32Array.of(low, high >>> 0).buffer)
  return {
    add: (data, words, from, to) => {
      const validity = data.validity
      if (limbs !== undefined) {
        for (let i = from; i < to; i++) if (valid(validity, i)) consider(words![i * limbs + 1]! | 0, words![i * limbs]!)
        return
      }
      if (data.layout !== "int64") throw new Error(`INT64 statistics of a ${data.layout} column`)
      const halves = new Uint32Array(data.values.buffer, data.values.byteOffset, data.values.length * 2)
      for (let i = from; i < to; i++) if (valid(validity, i)) consider(halves[i * 2 + 1]! | 0, halves[i * 2]!)
    },
    result: () => (seen ? { min: bytes(minHigh, minLow), max: bytes(maxHigh, maxLow) } : {})
  }
}

export const floatMinMax = (width: 4 | 8): MinMax => {
  let min = Number.POSITIVE_INFINITY
  let max = Number.NEGATIVE_INFINITY
  let seen = false
  const bytes = (value: number) => new Uint8Array((width === 4 ? Float32Array.of(value) : Float64Array.of(value)).buffer)
  return {
    add: (data, _words, from, to) => {
      if (data.layout !== "float32" && data.layout !== "float64") throw new Error(`float statistics of a ${data.layout} column`)
      const values = data.values
      const validity = data.validity
      for (let i = from; i < to; i++) {
        if (!valid(validity, i)) continue
        const value = values[i]!
        if (value !== value) continue
        seen = true
        if (value < min) min = value
        if (value > max) max = value
      }
    },
    result: () => (seen ? { min: bytes(min === 0 ? -0 : min), max: bytes(max === 0 ? 0 : max) } : {})
  }
}

export const boolMinMax = (): MinMax => {
  let anyFalse = false
  let anyTrue = false
  return {
    add: (data, _words, from, to) => {
      if (data.layout !== "bool") throw new Error(`BOOLEAN statistics of a ${data.layout} column`)
      const validity = data.validity
      for (let i = from; i < to; i++) {
        if (!valid(validity, i)) continue
        if ((data.values[i >>> 3]! & (1 << (i & 7))) !== 0) anyTrue = true
        else anyFalse = true
      }
    },
    result: () =>
      anyFalse || anyTrue ? { min: Uint8Array.of(anyFalse ? 0 : 1), max: Uint8Array.of(anyTrue ? 1 : 0) } : {}
  }
}

const viewOf = (bytes: Uint8Array): DataView => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/**
 * Unsigned bytewise order of `a[aFrom…aTo)` and `b[bFrom…bTo)`, four bytes at a time (big-endian words order as
 * bytes do): values of a column often share a long prefix (`customer 17`, `customer 18`).
 */
const compareBytes = (a: DataView, aFrom: number, aTo: number, b: DataView, bFrom: number, bTo: number): number => {
  const length = Math.min(aTo - aFrom, bTo - bFrom)
  let k = 0
  for (; k + 4 <= length; k += 4) {
    const x = a.getUint32(aFrom + k)
    const y = b.getUint32(bFrom + k)
    if (x !== y) return x < y ? -1 : 1
  }
  for (; k < length; k++) {
    const difference = a.getUint8(aFrom + k) - b.getUint8(bFrom + k)
    if (difference !== 0) return difference
  }
  return aTo - aFrom - (bTo - bFrom)
}

/** Strings, bytes (BYTE_ARRAY) and UUIDs (FIXED_LEN_BYTE_ARRAY): unsigned bytewise order; min/max copied out. */
export const bytesMinMax = (): MinMax => {
  let min: Uint8Array | undefined
  let max: Uint8Array | undefined
  return {
    add: (data, _words, from, to) => {
      if (data.layout !== "binary" && data.layout !== "fixed") throw new Error(`byte statistics of a ${data.layout} column`)
      const source = data.data
      const view = viewOf(source)
      const validity = data.validity
      const offsets = data.layout === "binary" ? data.offsets : undefined
      const width = data.layout === "fixed" ? data.width : 0
      // The best of this range by position, copied once at the end: no copy per new minimum.
      let minStart = -1
      let minEnd = -1
      let maxStart = -1
      let maxEnd = -1
      for (let i = from; i < to; i++) {
        if (!valid(validity, i)) continue
        const start = offsets === undefined ? i * width : offsets[i]!
        const end = offsets === undefined ? start + width : offsets[i + 1]!
        if (minStart < 0) {
          minStart = maxStart = start
          minEnd = maxEnd = end
        } else if (compareBytes(view, start, end, view, minStart, minEnd) < 0) {
          minStart = start
          minEnd = end
        } else if (compareBytes(view, start, end, view, maxStart, maxEnd) > 0) {
          maxStart = start
          maxEnd = end
        }
      }
      if (minStart < 0) return
      if (min === undefined || compareBytes(view, minStart, minEnd, viewOf(min), 0, min.length) < 0) min = source.slice(minStart, minEnd)
      if (max === undefined || compareBytes(view, maxStart, maxEnd, viewOf(max), 0, max.length) > 0) max = source.slice(maxStart, maxEnd)
    },
    result: () => (min === undefined || max === undefined ? {} : shortened(min, max))
  }
}

/** Decimals wider than 18 digits: limbs compared from the top (signed) down (unsigned); written big-endian. */
export const wideDecimalMinMax = (limbs: number, byteLength: number): MinMax => {
  let min: Uint32Array | undefined
  let max: Uint32Array | undefined
  const compare = (a: Uint32Array, at: number, b: Uint32Array, bt: number): number => {
    const top = (a[at + limbs - 1]! | 0) - (b[bt + limbs - 1]! | 0)
    if (top !== 0) return top
    for (let l = limbs - 2; l >= 0; l--) {
      const difference = a[at + l]! - b[bt + l]!
      if (difference !== 0) return difference
    }
    return 0
  }
  const bytes = (value: Uint32Array) => {
    const out = new Uint8Array(byteLength)
    limbsToBigEndian(value, 0, out, 0, byteLength)
    return out
  }
  return {
    add: (data, words, from, to) => {
      const validity = data.validity
      for (let i = from; i < to; i++) {
        if (!valid(validity, i)) continue
        const at = i * limbs
        if (min === undefined || compare(words!, at, min, 0) < 0) min = words!.slice(at, at + limbs)
        if (max === undefined || compare(words!, at, max, 0) > 0) max = words!.slice(at, at + limbs)
      }
    },
    result: () => (min === undefined || max === undefined ? {} : { min: bytes(min), max: bytes(max) })
  }
}
