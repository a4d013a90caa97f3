/**
 * Which column buffers may be handed to another thread without a copy. A builder's `finish()` makes fresh
 * ArrayBuffers that belong to that one column of one batch and marks them here; the encoder thread transfers a
 * marked buffer (detaching it on this side) instead of copying it, and copies every other buffer (views into a
 * shared buffer, columns a transform or a test made by hand). A buffer is handed over at most once: a batch written
 * again after its buffers went to the encoder thread is refused rather than read as empty.
 */
const exclusive = new WeakSet<ArrayBufferLike>()
const handedOver = new WeakSet<ArrayBufferLike>()

/** Marks `array`'s buffer as made for this array alone (it must view the whole buffer). */
export const madeForOneColumn = <T extends { readonly buffer: ArrayBufferLike }>(array: T): T => {
  exclusive.add(array.buffer)
  return array
}

/**
 * Whether `array`'s buffer may be transferred: marked by a builder and viewed whole. Once this answers true the
 * buffer counts as handed over.
 */
export const takeForTransfer = (array: { readonly buffer: ArrayBufferLike; readonly byteOffset: number; readonly byteLength: number }): boolean => {
  const buffer = array.buffer
  if (!exclusive.has(buffer) || array.byteOffset !== 0 || array.byteLength !== buffer.byteLength) return false
  exclusive.delete(buffer)
  handedOver.add(buffer)
  return true
}

/** Whether `buffer` was transferred to another thread already (its bytes are gone from this one). */
export const wasHandedOver = (buffer: ArrayBufferLike): boolean => handedOver.has(buffer)
