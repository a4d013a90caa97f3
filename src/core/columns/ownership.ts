/**
 * Which column buffers may be handed to another thread without a copy. A builder's `finish()` hands out
 * ArrayBuffers that belong to that one column of one batch (a view of their first bytes: the rest is unused slack)
 * and marks them here; the encoder thread transfers a marked buffer (detaching it on this side) instead of copying
 * it, and copies every other buffer (views into a shared buffer, columns a transform or a test made by hand). A
 * buffer is handed over at most once: a batch written again after its buffers went to the encoder thread is refused
 * rather than read as empty.
 */
// A marked buffer → the byte length of the one view of it the builder handed out (from byte 0).
const exclusive = new WeakMap<ArrayBufferLike, number>()
const handedOver = new WeakSet<ArrayBufferLike>()

type View = { readonly buffer: ArrayBufferLike; readonly byteOffset: number; readonly byteLength: number }

/** Marks `array`'s buffer as made for this array alone (it must view the buffer from its first byte). */
export const madeForOneColumn = <T extends View>(array: T): T => {
  exclusive.set(array.buffer, array.byteLength)
  return array
}

/**
 * Whether `array`'s buffer may be transferred: marked by a builder, and `array` is the view it was marked with (any
 * other view of it — a transform's slice — is copied). Once this answers true the buffer counts as handed over.
 */
export const takeForTransfer = (array: View): boolean => {
  const buffer = array.buffer
  if (array.byteOffset !== 0 || exclusive.get(buffer) !== array.byteLength) return false
  exclusive.delete(buffer)
  handedOver.add(buffer)
  return true
}

/** Whether `buffer` was transferred to another thread already (its bytes are gone from this one). */
export const wasHandedOver = (buffer: ArrayBufferLike): boolean => handedOver.has(buffer)
