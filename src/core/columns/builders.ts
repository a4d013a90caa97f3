import { finished, finishedBytes, finishedOffsets, grow, growOffsets, Validity } from "./builder-buffers.js"
import type { BinaryData, BoolData, ColumnData, FixedData, ListData } from "./data.js"
import { madeForOneColumn } from "./ownership.js"

/**
 * Builders fill the buffers of one column (see `ColumnData`), growing them by doubling. They are the low-level
 * interface sources decode into: `slot()` hands out the byte offset of the next fixed-width value so a decoder can
 * copy wire bytes straight in; `BinaryBuilder.reserve`/`commit` does the same for variable-width values.
 * `finish()` returns views of the rows appended, each over a buffer of its own (marked in ownership.ts, so the
 * encoder thread can transfer it): the builder's buffer itself when at most an eighth of it is unused, else a
 * trimmed copy. After `finish()` a builder is either dropped or `reset()` for the next batch, which sizes fresh
 * buffers from the batch just finished: a source that reuses its builders allocates each batch's buffers about
 * once (no doubling, no trimming copy), which keeps the reading thread's garbage ArrayBuffers — and so its peak
 * memory — small.
 */

type FixedLayout = "int16" | "int32" | "int64" | "float32" | "float64"

const WIDTH: Record<FixedLayout, number> = { int16: 2, int32: 4, int64: 8, float32: 4, float64: 8 }

/** Fixed-width numbers (int16/32/64, float32/64), little-endian as the typed arrays read them. */
export class NumberBuilder {
  readonly width: number
  bytes: Uint8Array<ArrayBuffer>
  view: DataView
  length = 0
  private readonly validity: Validity

  constructor(
    readonly layout: FixedLayout,
    private readonly capacity = 1024
  ) {
    this.width = WIDTH[layout]
    this.bytes = new Uint8Array(capacity * this.width)
    this.view = new DataView(this.bytes.buffer)
    this.validity = new Validity(capacity)
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
    const buffer = finished(this.bytes.buffer, length * this.width)
    const base = { length, nullCount: this.validity.nullCount, validity: this.validity.finish(length) }
    switch (this.layout) {
      case "int16":
        return { ...base, layout: "int16", values: madeForOneColumn(new Int16Array(buffer, 0, length)) }
      case "int32":
        return { ...base, layout: "int32", values: madeForOneColumn(new Int32Array(buffer, 0, length)) }
      case "int64":
        return { ...base, layout: "int64", values: madeForOneColumn(new BigInt64Array(buffer, 0, length)) }
      case "float32":
        return { ...base, layout: "float32", values: madeForOneColumn(new Float32Array(buffer, 0, length)) }
      case "float64":
        return { ...base, layout: "float64", values: madeForOneColumn(new Float64Array(buffer, 0, length)) }
    }
  }

  /** Starts the next batch after `finish()`, with room for as many rows as this one had. */
  reset(): void {
    const rows = Math.max(this.capacity, this.length)
    this.bytes = new Uint8Array(rows * this.width)
    this.view = new DataView(this.bytes.buffer)
    this.validity.reset(rows)
    this.length = 0
  }
}

/** Booleans, one bit per row. */
export class BoolBuilder {
  bits: Uint8Array<ArrayBuffer>
  length = 0
  private readonly validity: Validity

  constructor(private readonly capacity = 1024) {
    this.bits = new Uint8Array((capacity + 7) >>> 3)
    this.validity = new Validity(capacity)
  }

  push(value: boolean): void {
    const row = this.length++
    if (row >>> 3 >= this.bits.byteLength) this.bits = grow(this.bits, (row >>> 3) + 1)
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
      values: finishedBytes(this.bits, (length + 7) >>> 3)
    }
  }

  /** Starts the next batch after `finish()`, with room for as many rows as this one had. */
  reset(): void {
    const rows = Math.max(this.capacity, this.length)
    this.bits = new Uint8Array((rows + 7) >>> 3)
    this.validity.reset(rows)
    this.length = 0
  }
}

/** Fixed-size binary values (`width` bytes each: uuid). */
export class FixedBuilder {
  bytes: Uint8Array<ArrayBuffer>
  length = 0
  private readonly validity: Validity

  constructor(
    readonly width: number,
    private readonly capacity = 1024
  ) {
    this.bytes = new Uint8Array(capacity * width)
    this.validity = new Validity(capacity)
  }

  /** Appends a valid row and returns the byte offset of its `width` bytes in `bytes`. */
  slot(): number {
    const offset = this.length * this.width
    if (offset + this.width > this.bytes.byteLength) this.bytes = grow(this.bytes, offset + this.width)
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
      data: finishedBytes(this.bytes, length * this.width)
    }
  }

  /** Starts the next batch after `finish()`, with room for as many rows as this one had. */
  reset(): void {
    const rows = Math.max(this.capacity, this.length)
    this.bytes = new Uint8Array(rows * this.width)
    this.validity.reset(rows)
    this.length = 0
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
  private readonly validity: Validity

  constructor(
    private readonly capacity = 1024,
    bytesPerValue = 16
  ) {
    this.data = new Uint8Array(capacity * bytesPerValue)
    this.offsets = new Int32Array(capacity + 1)
    this.validity = new Validity(capacity)
  }

  /** Makes room for `bytes` more bytes; write them at `data[end…]`, then `commit(written)`. */
  reserve(bytes: number): void {
    if (this.end + bytes > this.data.byteLength) this.data = grow(this.data, this.end + bytes)
  }

  /** Ends the current value after `written` bytes were placed at `data[end…]`. */
  commit(written: number): void {
    this.end += written
    const row = this.length++
    if (row + 2 > this.offsets.length) this.offsets = growOffsets(this.offsets, row + 2)
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
      offsets: finishedOffsets(this.offsets, length + 1),
      data: finishedBytes(this.data, this.end)
    }
  }

  /**
   * Starts the next batch after `finish()`, with room for as many rows as this one had and an eighth more bytes
   * (values' sizes vary from batch to batch more than their count).
   */
  reset(): void {
    const rows = Math.max(this.capacity, this.length)
    this.offsets = new Int32Array(rows + 1)
    this.data = new Uint8Array(Math.max(64, this.end + (this.end >>> 3)))
    this.validity.reset(rows)
    this.length = 0
    this.end = 0
  }
}

/** Lists: append the elements to `child`, then `endList()` closes one row. */
export class ListBuilder<Child extends { readonly length: number; finish(): ColumnData }> {
  offsets: Int32Array<ArrayBuffer>
  length = 0
  private readonly validity: Validity

  constructor(
    readonly child: Child,
    private readonly capacity = 1024
  ) {
    this.offsets = new Int32Array(capacity + 1)
    this.validity = new Validity(capacity)
  }

  endList(): void {
    const row = this.length++
    if (row + 2 > this.offsets.length) this.offsets = growOffsets(this.offsets, row + 2)
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
      offsets: finishedOffsets(this.offsets, length + 1),
      child: this.child.finish()
    }
  }

  /** Starts the next batch after `finish()`, the child's too, with room for as many rows as this one had. */
  reset(this: ListBuilder<Child & { reset(): void }>): void {
    const rows = Math.max(this.capacity, this.length)
    this.offsets = new Int32Array(rows + 1)
    this.validity.reset(rows)
    this.length = 0
    this.child.reset()
  }
}
