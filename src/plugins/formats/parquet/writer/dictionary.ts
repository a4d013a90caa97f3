import type { BinaryData } from "../../../../core/columns/data.js"
import { ByteBuffer } from "./bytes.js"

/**
 * A dictionary of a BYTE_ARRAY column chunk: distinct values in first-seen order (already PLAIN-encoded as the
 * dictionary page body) and, per non-NULL value of the chunk, its index. Values are hashed from their bytes
 * (length, first and last 32 bytes) into an open-addressing table and compared bytewise on a hit.
 */
export interface Dictionary {
  readonly page: ByteBuffer
  readonly size: number
  readonly indices: Uint32Array
}

/** A dictionary page larger than this is not worth it; the chunk is written PLAIN (as arrow-rs does, 1 MiB). */
export const MAX_DICTIONARY_BYTES = 1 << 20
const MAX_ENTRIES = 1 << 16
/** After this many values, more than half of them distinct means the column is mostly unique: give up early. */
const SAMPLE = 1024

const hashOf = (data: Uint8Array, start: number, end: number): number => {
  let hash = (0x811c9dc5 ^ (end - start)) >>> 0
  const head = Math.min(end, start + 32)
  for (let i = start; i < head; i++) hash = Math.imul(hash ^ data[i]!, 0x01000193)
  for (let i = Math.max(head, end - 32); i < end; i++) hash = Math.imul(hash ^ data[i]!, 0x01000193)
  return hash >>> 0
}

class Builder {
  readonly page = new ByteBuffer(1 << 12)
  size = 0
  private slots = new Int32Array(1 << 10).fill(-1)
  private hashes = new Uint32Array(64)
  private starts = new Int32Array(64)
  private ends = new Int32Array(64)

  /** The index of `data[start, end)`, added if new; -1 when the dictionary is full. */
  indexOf(data: Uint8Array, start: number, end: number): number {
    const hash = hashOf(data, start, end)
    const mask = this.slots.length - 1
    const page = this.page.bytes
    for (let slot = hash & mask; ; slot = (slot + 1) & mask) {
      const entry = this.slots[slot]!
      if (entry < 0) return this.add(slot, hash, data, start, end)
      if (this.hashes[entry] !== hash || this.ends[entry]! - this.starts[entry]! !== end - start) continue
      let same = true
      for (let a = this.starts[entry]!, b = start; b < end; a++, b++) {
        if (page[a] !== data[b]) {
          same = false
          break
        }
      }
      if (same) return entry
    }
  }

  private add(slot: number, hash: number, data: Uint8Array, start: number, end: number): number {
    if (this.size >= MAX_ENTRIES || this.page.length + 4 + end - start > MAX_DICTIONARY_BYTES) return -1
    const entry = this.size++
    if (entry === this.hashes.length) {
      const grow = <T extends Uint32Array | Int32Array>(array: T, make: (n: number) => T): T => {
        const next = make(array.length * 2)
        next.set(array)
        return next
      }
      this.hashes = grow(this.hashes, (n) => new Uint32Array(n))
      this.starts = grow(this.starts, (n) => new Int32Array(n))
      this.ends = grow(this.ends, (n) => new Int32Array(n))
    }
    this.page.u32(end - start)
    this.starts[entry] = this.page.length
    this.page.appendRange(data, start, end)
    this.ends[entry] = this.page.length
    this.hashes[entry] = hash
    this.slots[slot] = entry
    if (this.size * 2 > this.slots.length) this.rehash()
    return entry
  }

  private rehash(): void {
    const slots = new Int32Array(this.slots.length * 2).fill(-1)
    const mask = slots.length - 1
    for (let entry = 0; entry < this.size; entry++) {
      let slot = this.hashes[entry]! & mask
      while (slots[slot]! >= 0) slot = (slot + 1) & mask
      slots[slot] = entry
    }
    this.slots = slots
  }
}

/** A range of a chunk's leaf values: rows `[from, to)` of one batch's column. */
export interface BinaryRange {
  readonly data: BinaryData
  readonly from: number
  readonly to: number
}

/**
 * The chunk's dictionary, or undefined when it would not pay: too many distinct values (more than half of
 * the first values, or overall), or too many bytes.
 */
export const buildDictionary = (ranges: ReadonlyArray<BinaryRange>, nonNull: number): Dictionary | undefined => {
  const builder = new Builder()
  const indices = new Uint32Array(nonNull)
  let count = 0
  for (const { data, from, to } of ranges) {
    const { offsets, validity } = data
    for (let i = from; i < to; i++) {
      if (validity !== undefined && (validity[i >>> 3]! & (1 << (i & 7))) === 0) continue
      const index = builder.indexOf(data.data, offsets[i]!, offsets[i + 1]!)
      if (index < 0) return undefined
      indices[count++] = index
      if (count === SAMPLE && builder.size * 2 > SAMPLE) return undefined
    }
  }
  if (builder.size * 2 > count && count > SAMPLE) return undefined
  return { page: builder.page, size: builder.size, indices }
}
