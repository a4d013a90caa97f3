/**
 * A part's first buffer is small and grows by doubling: a partitioned export's parts often hold a few rows. Later
 * buffers are sized from the previous batch, so a large part grows once. Buffers come from `Buffer.allocUnsafeSlow`,
 * never a slice of Node's shared pool (the encoder thread transfers them).
 */
const MIN_CAPACITY = 512
const EMPTY = new Uint8Array(0)

/** Bytes with a DataView over exactly them, for `ByteOut.copyViewed`. */
export interface Viewed {
  readonly data: Uint8Array
  readonly view: DataView
}

const viewOf = (data: Uint8Array): DataView => new DataView(data.buffer, data.byteOffset, data.byteLength)

export const viewed = (data: Uint8Array): Viewed => ({ data, view: viewOf(data) })

/**
 * A growing byte buffer the text encoders render into, field by field: no JS string per value and no string
 * concatenation per line. Writers call `ensure(n)` and then write at `buf[pos…]` directly (`buf` and `view` may
 * be replaced by `ensure`, so they are read after it). `take` hands over what was written — a copy when it fills
 * little of the buffer, which is then kept; else the buffer itself, replaced at the next write by a fresh one sized
 * from this batch (bytes handed over are never written again).
 */
export class ByteOut {
  buf: Uint8Array<ArrayBuffer> = EMPTY
  /** A DataView over `buf`, to move four bytes at a time. */
  view: DataView = viewOf(EMPTY)
  pos = 0
  /** The size of the next buffer, allocated when the first byte is written: a part may end before it needs one. */
  private nextCapacity: number

  constructor(capacity = MIN_CAPACITY) {
    this.nextCapacity = capacity
  }

  /** Makes room for `bytes` more bytes after `pos`. */
  ensure(bytes: number): void {
    const needed = this.pos + bytes
    if (needed <= this.buf.length) return
    let capacity = Math.max(this.buf.length * 2, this.nextCapacity)
    while (capacity < needed) capacity *= 2
    const grown = Buffer.allocUnsafeSlow(capacity)
    grown.set(this.buf.subarray(0, this.pos))
    this.buf = grown
    this.view = viewOf(grown)
  }

  byte(value: number): void {
    if (this.pos >= this.buf.length) this.ensure(1)
    this.buf[this.pos++] = value
  }

  /** Text known to be ASCII (number spellings, literals). */
  ascii(text: string): void {
    this.ensure(text.length)
    const buf = this.buf
    let pos = this.pos
    for (let i = 0; i < text.length; i++) buf[pos++] = text.charCodeAt(i)
    this.pos = pos
  }

  /** Bytes `source[start…end)`, copied. */
  copy(source: Uint8Array, start: number, end: number): void {
    const length = end - start
    this.ensure(length)
    // A view per value costs more than a loop for the short values that dominate.
    if (length < 64) {
      const buf = this.buf
      let pos = this.pos
      for (let i = start; i < end; i++) buf[pos++] = source[i]!
    } else {
      this.buf.set(source.subarray(start, end), this.pos)
    }
    this.pos += length
  }

  /**
   * Bytes `source[start…end)`, copied four at a time: short copies (keys, names, codes) dominate, and for them
   * this beats both a byte loop and a `set` of a fresh subarray.
   */
  copyViewed(source: Viewed, start: number, end: number): void {
    const length = end - start
    this.ensure(length)
    if (length >= 64) {
      this.buf.set(source.data.subarray(start, end), this.pos)
      this.pos += length
      return
    }
    const from = source.view
    const view = this.view
    let pos = this.pos
    let i = start
    for (; i + 4 <= end; i += 4, pos += 4) view.setUint32(pos, from.getUint32(i, true), true)
    for (; i < end; i++) view.setUint8(pos++, from.getUint8(i))
    this.pos = pos
  }

  take(): ReadonlyArray<Uint8Array> {
    if (this.pos === 0) return []
    // Output that fills little of the buffer (a small part's rows) is copied out and the buffer kept: a view would
    // pin the whole buffer for as long as the bytes wait for their upload.
    if (this.pos <= this.buf.length >> 2) {
      const copy = new Uint8Array(this.buf.subarray(0, this.pos))
      this.pos = 0
      return [copy]
    }
    const bytes = this.buf.subarray(0, this.pos)
    this.nextCapacity = Math.max(MIN_CAPACITY, this.pos + (this.pos >> 3))
    this.buf = EMPTY
    this.view = viewOf(EMPTY)
    this.pos = 0
    return [bytes]
  }
}
