import { madeForOneColumn } from "./ownership.js"

/** The buffers behind the column builders (builders.ts): growth by doubling, the validity bitmap, finishing. */

export const grow = (bytes: Uint8Array<ArrayBuffer>, needed: number): Uint8Array<ArrayBuffer> => {
  if (needed <= bytes.byteLength) return bytes
  let capacity = Math.max(64, bytes.byteLength * 2)
  while (capacity < needed) capacity *= 2
  const next = new Uint8Array(capacity)
  next.set(bytes)
  return next
}

/**
 * The first `used` bytes of `buffer` as a finished column's own buffer: `buffer` itself when at most an eighth of it
 * is unused (the slack travels with it), else a trimmed copy.
 */
export const finished = (buffer: ArrayBuffer, used: number): ArrayBuffer =>
  buffer.byteLength - used <= buffer.byteLength >>> 3 ? buffer : buffer.slice(0, used)

/** `bytes[0, used)` as a finished column's buffer (see `finished`), marked for transfer. */
export const finishedBytes = (bytes: Uint8Array<ArrayBuffer>, used: number): Uint8Array<ArrayBuffer> =>
  madeForOneColumn(new Uint8Array(finished(bytes.buffer, used), 0, used))

export const finishedOffsets = (offsets: Int32Array<ArrayBuffer>, count: number): Int32Array<ArrayBuffer> =>
  madeForOneColumn(new Int32Array(finished(offsets.buffer, count * 4), 0, count))

/** A validity bitmap allocated on the first null (a column without nulls carries none), for about `rows` rows. */
export class Validity {
  bits: Uint8Array<ArrayBuffer> | undefined = undefined
  nullCount = 0

  constructor(private rows: number) {}

  /** Marks row `row` null; every earlier row without a bitmap yet was valid. */
  setNull(row: number): void {
    if (this.bits === undefined) {
      this.bits = new Uint8Array(Math.max(8, (this.rows + 7) >>> 3, ((row >>> 3) + 1) * 2)).fill(0xff)
    }
    this.bits = growFilled(this.bits, (row >>> 3) + 1)
    this.bits[row >>> 3]! &= ~(1 << (row & 7))
    this.nullCount++
  }

  /** Keeps the bitmap long enough that row `row` (valid) is covered. */
  setValid(row: number): void {
    if (this.bits !== undefined && row >>> 3 >= this.bits.byteLength) this.bits = growFilled(this.bits, (row >>> 3) + 1)
  }

  finish(length: number): Uint8Array | undefined {
    if (this.bits === undefined) return undefined
    const bytes = (length + 7) >>> 3
    const out = finishedBytes(growFilled(this.bits, bytes), bytes)
    // Bits past the last row are zero, as Arrow expects.
    if ((length & 7) !== 0) out[bytes - 1]! &= (1 << (length & 7)) - 1
    return out
  }

  /** Starts the next batch, expecting `rows` rows. */
  reset(rows: number): void {
    this.bits = undefined
    this.nullCount = 0
    this.rows = rows
  }
}

/** Offsets with room for `needed` entries, doubled when full. */
export const growOffsets = (offsets: Int32Array<ArrayBuffer>, needed: number): Int32Array<ArrayBuffer> => {
  if (needed <= offsets.length) return offsets
  const next = new Int32Array(Math.max(needed, offsets.length * 2))
  next.set(offsets)
  return next
}

const growFilled = (bits: Uint8Array<ArrayBuffer>, needed: number): Uint8Array<ArrayBuffer> => {
  if (needed <= bits.byteLength) return bits
  const next = new Uint8Array(Math.max(needed, bits.byteLength * 2)).fill(0xff)
  next.set(bits)
  return next
}
