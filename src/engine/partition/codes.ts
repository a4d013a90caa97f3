import type { ColumnData } from "../../core/columns/data.js"
import { isValid } from "../../core/columns/data.js"

/**
 * One batch's values of a partition column as small integer codes: `codes[row]` indexes `texts`, codes numbered in
 * order of first appearance. The text of a value is made once per distinct value of the batch, not once per row —
 * the per-row work is a comparison with the previous row, a hash or a division. Hive writes "" and NULL to the same
 * directory (which readers give back as NULL), so both are the code of `null`.
 */
export interface ColumnCodes {
  readonly codes: Int32Array
  readonly texts: ReadonlyArray<string | null>
}

/** A partition column's per-row text (`null` for SQL NULL), the definition the coders below must agree with. */
export type ValueReader = (column: ColumnData, row: number) => string | null

export type ColumnCoder = (column: ColumnData, rowCount: number) => ColumnCodes

class Dictionary {
  readonly texts: Array<string | null> = []
  private readonly byText = new Map<string | null, number>()

  code(text: string | null): number {
    const key = text === "" ? null : text
    let code = this.byText.get(key)
    if (code === undefined) {
      code = this.texts.length
      this.byText.set(key, code)
      this.texts.push(key)
    }
    return code
  }
}

/** Any column: its text read per row (for the less common partition types). */
export const readingCoder =
  (read: ValueReader): ColumnCoder =>
  (column, rowCount) => {
    const dictionary = new Dictionary()
    const codes = new Int32Array(rowCount)
    for (let row = 0; row < rowCount; row++) codes[row] = dictionary.code(read(column, row))
    return { codes, texts: dictionary.texts }
  }

const sameBytes = (data: Uint8Array, start: number, end: number, otherStart: number, otherEnd: number): boolean => {
  if (end - start !== otherEnd - otherStart) return false
  for (let i = 0; i < end - start; i++) if (data[start + i] !== data[otherStart + i]) return false
  return true
}

// FNV-1a over the value's bytes: equal bytes, equal hash; different values are then told apart byte by byte.
const hashBytes = (data: Uint8Array, start: number, end: number): number => {
  let hash = 0x811c9dc5
  for (let i = start; i < end; i++) hash = Math.imul(hash ^ data[i]!, 0x01000193)
  return hash
}

const utf8 = new TextDecoder()

/**
 * A UTF-8 text column: rows are compared by their bytes (the previous row's first, then rows of the same hash),
 * and only the first row of each distinct value is decoded.
 */
export const utf8Coder =
  (fallback: ColumnCoder): ColumnCoder =>
  (column, rowCount) => {
    if (column.layout !== "binary") return fallback(column, rowCount)
    const { data, offsets } = column
    const dictionary = new Dictionary()
    const codes = new Int32Array(rowCount)
    // hash → [row, code, row, code, …] of the distinct values seen with that hash
    const seen = new Map<number, Array<number>>()
    let previous = -1
    for (let row = 0; row < rowCount; row++) {
      if (!isValid(column, row)) {
        codes[row] = dictionary.code(null)
        continue
      }
      const start = offsets[row]!
      const end = offsets[row + 1]!
      if (previous >= 0 && sameBytes(data, start, end, offsets[previous]!, offsets[previous + 1]!)) {
        codes[row] = codes[previous]!
        previous = row
        continue
      }
      const hash = hashBytes(data, start, end)
      let candidates = seen.get(hash)
      let code = -1
      if (candidates === undefined) seen.set(hash, (candidates = []))
      for (let i = 0; i < candidates.length && code < 0; i += 2) {
        const other = candidates[i]!
        if (sameBytes(data, start, end, offsets[other]!, offsets[other + 1]!)) code = candidates[i + 1]!
      }
      if (code < 0) {
        code = dictionary.code(utf8.decode(data.subarray(start, end)))
        candidates.push(row, code)
      }
      codes[row] = code
      previous = row
    }
    return { codes, texts: dictionary.texts }
  }

/**
 * A column of whole numbers that name a bucket (a day, an hour): rows are compared by bucket, and each new bucket's
 * text is made once (`textOf`); buckets with the same text (two days of one month) share a code. `bucketOf` returns
 * undefined for a row it cannot place exactly, which then goes by `read`.
 */
export const bucketCoder =
  (bucketOf: (column: ColumnData) => ((row: number) => number | undefined) | undefined, textOf: (bucket: number) => string, read: ValueReader): ColumnCoder =>
  (column, rowCount) => {
    const bucketAt = bucketOf(column)
    if (bucketAt === undefined) return readingCoder(read)(column, rowCount)
    const dictionary = new Dictionary()
    const codes = new Int32Array(rowCount)
    const byBucket = new Map<number, number>()
    let previousBucket = Number.NaN
    let previousCode = -1
    for (let row = 0; row < rowCount; row++) {
      if (!isValid(column, row)) {
        codes[row] = dictionary.code(null)
        continue
      }
      const bucket = bucketAt(row)
      if (bucket === undefined) {
        codes[row] = dictionary.code(read(column, row))
        continue
      }
      if (bucket !== previousBucket) {
        let code = byBucket.get(bucket)
        if (code === undefined) byBucket.set(bucket, (code = dictionary.code(textOf(bucket))))
        previousBucket = bucket
        previousCode = code
      }
      codes[row] = previousCode
    }
    return { codes, texts: dictionary.texts }
  }

const LITTLE_ENDIAN = new Uint8Array(new Uint32Array([1]).buffer)[0] === 1
const MICROS_PER_HOUR = 3_600_000_000

/**
 * Hours since 1970 (floored) of an int64 µs column, read as two 32-bit words so no row makes a BigInt; a value
 * beyond ±2^53 µs (±285 years around 1970) has no exact Number and is left to the caller (undefined).
 */
export const hoursOfMicros = (column: ColumnData): ((row: number) => number | undefined) | undefined => {
  if (column.layout !== "int64" || !LITTLE_ENDIAN) return undefined
  const words = new Int32Array(column.values.buffer, column.values.byteOffset, column.values.length * 2)
  return (row) => {
    const high = words[2 * row + 1]!
    if (high >= 0x200000 || high < -0x200000) return undefined
    const micros = high * 0x100000000 + (words[2 * row]! >>> 0)
    // Exact: below 2^53 µs the quotient is under 2^22 hours, where a Number's step (≤ 2^-31) is finer than one µs
    // of an hour (1 / 3.6e9), so a value just below a boundary never rounds onto it.
    return Math.floor(micros / MICROS_PER_HOUR)
  }
}

/** Days since 1970 of an int32 date column. */
export const daysOfDates = (column: ColumnData): ((row: number) => number) | undefined =>
  column.layout === "int32" ? (row) => column.values[row]! : undefined
