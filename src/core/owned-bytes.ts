/**
 * Encoded bytes whose ArrayBuffers no one but the runtime holds once they are handed over: the encoder thread's
 * replies (they arrive transferred, engine/encoder-thread/parts.ts), and the buffers the PostgreSQL source cuts rendered CSV
 * chunks from (handed over once it cuts no more from one, rendered.ts). The upload frees such a buffer as soon as
 * every byte of it is copied into blocks or written (engine/block-buffers.ts). Freed at once instead of at V8's next
 * full collection, the buffers stop counting as the reading thread's external memory, which is what makes V8 run
 * those collections (one per few tens of MB allocated or received).
 */

// An owned buffer → how many of its bytes the chunks handed over view (the chunks of one reply may share a buffer).
const owned = new WeakMap<ArrayBufferLike, number>()

/**
 * Marks the buffers of `chunks` as owned by the runtime from now on: `chunks` are all the bytes of them the runtime
 * is given (call once per buffer, when no more of it will be handed out).
 */
export const handOver = (chunks: ReadonlyArray<Uint8Array>): void => {
  for (const chunk of chunks) owned.set(chunk.buffer, (owned.get(chunk.buffer) ?? 0) + chunk.byteLength)
}

/** The bytes of `buffer` the runtime was handed, when it owns the buffer (see `handOver`). */
export const ownedBytes = (buffer: ArrayBufferLike): number | undefined => owned.get(buffer)
