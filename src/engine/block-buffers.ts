import { ownedBytes } from "../core/owned-bytes.js"
import { releaseBuffers } from "../core/release-buffers.js"

/**
 * Frees, as soon as it may, the memory behind an upload's blocks instead of leaving it to the garbage collector
 * (which on the reading thread runs a full collection every few tens of MB of buffers allocated or received):
 * - a block the upload copied together from pieces: once it is written, when the sink releases what it is given
 *   (`capabilities.releasesBytes`);
 * - a buffer of encoded bytes the runtime owns (core/owned-bytes.ts): once every byte of it has been copied into a
 *   block or, when the sink releases what it is given, written as part of a block that views it. A buffer some
 *   block viewed is kept for good when the sink may hold on to it.
 * Buffers the runtime does not own (a source's or a same-thread encoder's) are never touched.
 */
export class BlockBuffers {
  private readonly made = new WeakSet<Uint8Array>()
  // Bytes of each buffer copied or written so far: a source may hand a buffer over after its first bytes came.
  private readonly finished = new WeakMap<ArrayBufferLike, number>()
  private readonly kept = new WeakSet<ArrayBufferLike>()

  constructor(private readonly sinkReleasesBytes: boolean) {}

  /** A block of `length` bytes to copy pieces into. */
  block(length: number): Uint8Array {
    const block = new Uint8Array(length)
    this.made.add(block)
    return block
  }

  /** A block is a view of `bytes`. */
  viewed(bytes: Uint8Array): void {
    if (this.sinkReleasesBytes) return
    this.kept.add(bytes.buffer)
    this.finished.delete(bytes.buffer)
  }

  /** `count` bytes of `bytes` were copied into a block. */
  copied(bytes: Uint8Array, count: number): void {
    this.done(bytes.buffer, count)
  }

  /** `block` was written; call before anything reads it again (it may be freed). */
  written(block: Uint8Array): void {
    if (!this.sinkReleasesBytes) return
    if (this.made.has(block)) releaseBuffers([block.buffer as ArrayBuffer])
    else this.done(block.buffer, block.length)
  }

  private done(buffer: ArrayBufferLike, count: number): void {
    if (this.kept.has(buffer)) return
    const finished = (this.finished.get(buffer) ?? 0) + count
    const owned = ownedBytes(buffer)
    if (owned === undefined || finished < owned) return void this.finished.set(buffer, finished)
    this.finished.delete(buffer)
    releaseBuffers([buffer as ArrayBuffer])
  }
}
