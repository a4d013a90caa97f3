const MIN_CAPACITY = 64 * 1024

/**
 * A growing byte buffer the text encoders render into, field by field: no JS string per value and no string
 * concatenation per line. Writers call `ensure(n)` and then write at `buf[pos…]` directly (`buf` may be replaced
 * by `ensure`, so it is read after it). `take` hands over what was written and starts a fresh buffer, sized from
 * the previous batch (the bytes handed over are never reused).
 */
export class ByteOut {
  buf: Uint8Array<ArrayBuffer>
  pos = 0

  constructor(capacity = MIN_CAPACITY) {
    this.buf = Buffer.allocUnsafe(capacity)
  }

  /** Makes room for `bytes` more bytes after `pos`. */
  ensure(bytes: number): void {
    const needed = this.pos + bytes
    if (needed <= this.buf.length) return
    let capacity = this.buf.length * 2
    while (capacity < needed) capacity *= 2
    const grown = Buffer.allocUnsafe(capacity)
    grown.set(this.buf.subarray(0, this.pos))
    this.buf = grown
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

  take(): ReadonlyArray<Uint8Array> {
    if (this.pos === 0) return []
    const bytes = this.buf.subarray(0, this.pos)
    this.buf = Buffer.allocUnsafe(Math.max(MIN_CAPACITY, this.pos + (this.pos >> 3)))
    this.pos = 0
    return [bytes]
  }
}
