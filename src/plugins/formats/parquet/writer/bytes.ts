/**
 * A growable little-endian byte buffer: what pages, page headers and the footer are assembled in. `bytes` is
 * valid up to `length`; it is replaced (not resized in place) when it grows, so take views only after writing.
 */
export class ByteBuffer {
  bytes: Uint8Array
  length = 0
  private view: DataView

  constructor(capacity = 1024) {
    this.bytes = new Uint8Array(capacity)
    this.view = new DataView(this.bytes.buffer)
  }

  /** Makes room for `more` bytes after `length`. */
  reserve(more: number): void {
    const needed = this.length + more
    if (needed <= this.bytes.length) return
    const next = new Uint8Array(Math.max(needed, this.bytes.length * 2))
    next.set(this.bytes.subarray(0, this.length))
    this.bytes = next
    this.view = new DataView(next.buffer)
  }

  clear(): void {
    this.length = 0
  }

  /** The bytes written so far, as a view (valid until the next write). */
  written(): Uint8Array {
    return this.bytes.subarray(0, this.length)
  }

  /** The bytes written so far, as a copy of their own. */
  copy(): Uint8Array {
    return this.bytes.slice(0, this.length)
  }

  u8(value: number): void {
    this.reserve(1)
    this.bytes[this.length++] = value
  }

  u32(value: number): void {
    this.reserve(4)
    this.view.setUint32(this.length, value, true)
    this.length += 4
  }

  i32(value: number): void {
    this.reserve(4)
    this.view.setInt32(this.length, value, true)
    this.length += 4
  }

  f32(value: number): void {
    this.reserve(4)
    this.view.setFloat32(this.length, value, true)
    this.length += 4
  }

  f64(value: number): void {
    this.reserve(8)
    this.view.setFloat64(this.length, value, true)
    this.length += 8
  }

  /** Overwrites 4 bytes at `at` (a length prefix reserved earlier). */
  setU32(at: number, value: number): void {
    this.view.setUint32(at, value, true)
  }

  /** Unsigned LEB128 of a value below 2^32. */
  varint(value: number): void {
    this.reserve(5)
    let rest = value >>> 0
    while (rest > 0x7f) {
      this.bytes[this.length++] = (rest & 0x7f) | 0x80
      rest >>>= 7
    }
    this.bytes[this.length++] = rest
  }

  /** Unsigned LEB128 of a non-negative integer up to 2^53. */
  varlong(value: number): void {
    this.reserve(10)
    let rest = value
    while (rest > 0x7f) {
      this.bytes[this.length++] = (rest % 128) | 0x80
      rest = Math.floor(rest / 128)
    }
    this.bytes[this.length++] = rest
  }

  append(source: Uint8Array): void {
    this.reserve(source.length)
    this.bytes.set(source, this.length)
    this.length += source.length
  }

  /** Appends `source[from, to)`; short ranges are copied by hand, which is cheaper than a view per call. */
  appendRange(source: Uint8Array, from: number, to: number): void {
    const count = to - from
    this.reserve(count)
    const bytes = this.bytes
    let at = this.length
    if (count < 32) {
      for (let i = from; i < to; i++) bytes[at++] = source[i]!
    } else {
      bytes.set(source.subarray(from, to), at)
    }
    this.length += count
  }
}
