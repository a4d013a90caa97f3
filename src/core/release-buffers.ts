import { MessageChannel } from "node:worker_threads"

// Both ends closed: a message posted here is dropped as soon as it is made, and the ArrayBuffers it transferred
// with it are freed at once (Node.js detaches them while serialising the message).
const { port1: nowhere, port2 } = new MessageChannel()
port2.close()
nowhere.close()

/**
 * Frees ArrayBuffers this thread owns and will not read again, now rather than at V8's next full collection:
 * buffers that arrive from another thread are dropped by this one, and V8 collects on its own only once 64 MB of
 * such memory has piled up per thread. After this call the buffers are detached (length 0); a buffer that cannot
 * be transferred (already detached, shared, or Node.js' Buffer pool) is left to the garbage collector.
 */
export const releaseBuffers = (buffers: Iterable<ArrayBuffer>): void => {
  for (const buffer of buffers) {
    if (buffer.byteLength === 0) continue
    try {
      nowhere.postMessage(undefined, [buffer])
    } catch {
      // Not transferable: the collector frees it as before.
    }
  }
}
