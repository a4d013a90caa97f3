import type { BinaryData, BoolData, ColumnData, FixedData, ListData } from "./data.js"
import { madeForOneColumn } from "./ownership.js"

/**
 * Builders fill the buffers of one column (see `ColumnData`), growing them by doubling. They are the low-level
 * interface sources decode into: `slot()` hands out the byte offset of the next fixed-width value so a decoder can
 * copy wire bytes straight in; `BinaryBuilder.reserve`/`commit` does the same for variable-width values.
 * `finish()` returns views trimmed to the rows appended, each over a buffer of its own (marked in ownership.ts, so the
 * encoder thread can transfer it); a builder is not used after it.
 */

const grow = (bytes: Uint8Array<ArrayBuffer>, needed: number): Uint8Array<ArrayBuffer> => {
  if (needed <= bytes.byteLength) return bytes
  let capacity = Math.max(64, bytes.byteLength * 2)
  while (capacity < needed) capacity *= 2
  const next = new Uint8Array(capacity)
  next.set(bytes)
  return next
}

/** A validity bitmap allocated on the first null (a column without nulls carries none). */
class Validity {
  bits: Uint8Array | undefined = undefined
  nullCount = 0

  /** Marks row `row` null; every earlier row without a bitmap yet was valid. */
  setNull(row: number): void {
    if (this.bits === undefined) {
      this.bits = new Uint8Array(Math.max(8, (row >>> 3) + 1) * 2).fill(0xff)
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
    const out = madeForOneColumn(growFilled(this.bits, bytes).slice(0, bytes))
    // Bits past the last row are zero, as Arrow expects.
    if ((length & 7) !== 0) out[bytes - 1]! &= (1 << (length & 7)) - 1
    return out
  }
}

/** Offsets with room for `needed` entries, doubled when full. */
const growOffsets = (offsets: Int32Array<ArrayBuffer>, needed: number): Int32Array<ArrayBuffer> => {
  if (needed <= offsets.length) return offsets
  const next = new Int32Array(Math.max(needed, offsets.length * 2))
  next.set(offsets)
  return next
}

const growFilled = (bits: Uint8Array, needed: number): Uint8Array => {
  if (needed <= bits.byteLength) return bits
  const next = new Uint8Array(Math.max(needed, bits.byteLength * 2)).fill(0xff)
  next.set(bits)
  return next
}

type FixedLayout = "int16" | "int32" | "int64" | "float32" | "float64"

const WIDTH: Record<FixedLayout, number> = { int16: 2, int32: 4, int64: 8, float32: 4, float64: 8 }

/** Fixed-width numbers (int16/32/64, float32/64), little-endian as the typed arrays read them. */
export class NumberBuilder {
  readonly width: number
  bytes: Uint8Array<ArrayBuffer>
  view: DataView
  length = 0
  private readonly validity = new Validity()

  constructor(
    readonly layout: FixedLayout,
    capacity = 1024
  ) {
    this.width = WIDTH[layout]
    this.bytes = new Uint8Array(capacity * this.width)
    this.view = new DataView(this.bytes.buffer)
  }

  /** Appends a valid row and returns the byte offset of its value in `bytes` (write it through `view` or `bytes`). */
  slot(): number {
    const offset = this.length * this.width
    if (offset + this.width > this.bytes.byteLength) {
      this.bytes = grow(this.bytes, offset + this.width)
      this.view = new DataView(this.bytes.buffer)
    }
    this.validity.setValid(this.length)
    this.length++
    return offset
  }

  appendNull(): void {
    const offset = this.slot()
    this.bytes.fill(0, offset, offset + this.width)
    this.validity.setNull(this.length - 1)
  }

  push(value: number): void {
    const offset = this.slot()
    switch (this.layout) {
      case "int16":
        this.view.setInt16(offset, value, true)
        break
      case "int32":
        this.view.setInt32(offset, value, true)
        break
      case "float32":
        this.view.setFloat32(offset, value, true)
        break
      case "float64":
        this.view.setFloat64(offset, value, true)
        break
      case "int64":
        this.view.setBigInt64(offset, BigInt(value), true)
    }
  }

  pushBigInt(value: bigint): void {
    const offset = this.slot() // first: it may replace `view`
    this.view.setBigInt64(offset, value, true)
  }

  finish(): ColumnData {
    const length = this.length
    const buffer = this.bytes.buffer.slice(0, length * this.width)
    const base = { length, nullCount: this.validity.nullCount, validity: this.validity.finish(length) }
    switch (this.layout) {
      case "int16":
        return { ...base, layout: "int16", values: madeForOneColumn(new Int16Array(buffer)) }
      case "int32":
        return { ...base, layout: "int32", values: madeForOneColumn(new Int32Array(buffer)) }
      case "int64":
        return { ...base, layout: "int64", values: madeForOneColumn(new BigInt64Array(buffer)) }
      case "float32":
        return { ...base, layout: "float32", values: madeForOneColumn(new Float32Array(buffer)) }
      case "float64":
        return { ...base, layout: "float64", values: madeForOneColumn(new Float64Array(buffer)) }
    }
  }
}

/** Booleans, one bit per row. */
export class BoolBuilder {
  bits: Uint8Array<ArrayBuffer> = new Uint8Array(128)
  length = 0
  private readonly validity = new Validity()

  push(value: boolean): void {
    const row = this.length++
    this.bits = grow(this.bits, (row >>> 3) + 1)
    if (value) this.bits[row >>> 3]! |= 1 << (row & 7)
    this.validity.setValid(row)
  }

  appendNull(): void {
    this.push(false)
    this.validity.setNull(this.length - 1)
  }

  finish(): BoolData {
    const length = this.length
    return {
      layout: "bool",
      length,
      nullCount: this.validity.nullCount,
      validity: this.validity.finish(length),
      values: madeForOneColumn(this.bits.slice(0, (length + 7) >>> 3))
    }
  }
}

/** Fixed-size binary values (`width` bytes each: uuid). */
export class FixedBuilder {
  bytes: Uint8Array<ArrayBuffer>
  length = 0
  private readonly validity = new Validity()

  constructor(
    readonly width: number,
    capacity = 1024
  ) {
    this.bytes = new Uint8Array(capacity * width)
  }

  /** Appends a valid row and returns the byte offset of its `width` bytes in `bytes`. */
  slot(): number {
    const offset = this.length * this.width
    this.bytes = grow(this.bytes, offset + this.width)
    this.validity.setValid(this.length)
    this.length++
    return offset
  }

  appendNull(): void {
    const offset = this.slot()
    this.bytes.fill(0, offset, offset + this.width)
    this.validity.setNull(this.length - 1)
  }

  finish(): FixedData {
    const length = this.length
    return {
      layout: "fixed",
      width: this.width,
      length,
      nullCount: this.validity.nullCount,
      validity: this.validity.finish(length),
      data: madeForOneColumn(this.bytes.slice(0, length * this.width))
    }
  }
}

const encoder = new TextEncoder()

/** Variable-width values: UTF-8 text or raw bytes, with `length + 1` offsets. */
export class BinaryBuilder {
  data: Uint8Array<ArrayBuffer>
  /** Bytes of `data` in use. */
  end = 0
  offsets: Int32Array<ArrayBuffer>
  length = 0
  private readonly validity = new Validity()

  constructor(capacity = 1024, bytesPerValue = 16) {
    this.data = new Uint8Array(capacity * bytesPerValue)
    this.offsets = new Int32Array(capacity + 1)
  }

  /** Makes room for `bytes` more bytes; write them at `data[end…]`, then `commit(written)`. */
  reserve(bytes: number): void {
    this.data = grow(this.data, this.end + bytes)
  }

  /** Ends the current value after `written` bytes were placed at `data[end…]`. */
  commit(written: number): void {
    this.end += written
    const row = this.length++
    this.offsets = growOffsets(this.offsets, row + 2)
    this.offsets[row + 1] = this.end
    this.validity.setValid(row)
  }

  appendBytes(source: Uint8Array, start = 0, end = source.byteLength): void {
    const size = end - start
    this.reserve(size)
    this.data.set(source.subarray(start, end), this.end)
    this.commit(size)
  }

  appendString(text: string): void {
    // UTF-8 needs at most 3 bytes per UTF-16 unit.
    this.reserve(text.length * 3)
    this.commit(encoder.encodeInto(text, this.data.subarray(this.end)).written)
  }

  appendNull(): void {
    this.commit(0)
    this.validity.setNull(this.length - 1)
  }

  finish(): BinaryData {
    const length = this.length
    return {
      layout: "binary",
      length,
      nullCount: this.validity.nullCount,
      validity: this.validity.finish(length),
      offsets: madeForOneColumn(this.offsets.slice(0, length + 1)),
      data: madeForOneColumn(this.data.slice(0, this.end))
    }
  }
}

/** Lists: append the elements to `child`, then `endList()` closes one row. */
export class ListBuilder<Child extends { readonly length: number; finish(): ColumnData }> {
  offsets: Int32Array<ArrayBuffer> = new Int32Array(1025)
  length = 0
  private readonly validity = new Validity()

  constructor(readonly child: Child) {}

  endList(): void {
    const row = this.length++
    this.offsets = growOffsets(this.offsets, row + 2)
    this.offsets[row + 1] = this.child.length
    this.validity.setValid(row)
  }

  appendNull(): void {
    this.endList()
    this.validity.setNull(this.length - 1)
  }

  finish(): ListData {
    const length = this.length
    return {
      layout: "list",
      length,
      nullCount: this.validity.nullCount,
      validity: this.validity.finish(length),
      offsets: madeForOneColumn(this.offsets.slice(0, length + 1)),
      child: this.child.finish()
    }
  }
}
