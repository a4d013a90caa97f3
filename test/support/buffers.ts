/** How many bytes of each ArrayBuffer `chunks` view, by buffer (the chunks of one buffer summed). */
export const bytesPerBuffer = (chunks: ReadonlyArray<Uint8Array>): Map<ArrayBufferLike, number> => {
  const perBuffer = new Map<ArrayBufferLike, number>()
  for (const chunk of chunks) perBuffer.set(chunk.buffer, (perBuffer.get(chunk.buffer) ?? 0) + chunk.byteLength)
  return perBuffer
}
