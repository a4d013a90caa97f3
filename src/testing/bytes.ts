/** Deterministic test bytes and byte comparison for the conformance suites. */

/** `length` pseudo-random bytes from `seed` (xorshift32): incompressible, and different for every seed. */
export const bytesOf = (seed: number, length: number): Uint8Array => {
  const words = new Uint32Array(Math.ceil(length / 4))
  let state = (seed * 2654435761) >>> 0 || 1
  for (let i = 0; i < words.length; i++) {
    state ^= state << 13
    state >>>= 0
    state ^= state >>> 17
    state ^= state << 5
    state >>>= 0
    words[i] = state
  }
  return new Uint8Array(words.buffer, 0, length)
}

/** `count` blocks as the runtime cuts them: all `blockSize` bytes except a shorter last one. */
export const blocksOf = (seed: number, blockSize: number, count: number): Array<Uint8Array> =>
  Array.from({ length: count }, (_, index) =>
    bytesOf(seed * 1000 + index, index === count - 1 ? Math.max(1, Math.floor(blockSize / 3)) : blockSize)
  )

export const concatBytes = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => {
  const out = new Uint8Array(chunks.reduce((total, chunk) => total + chunk.length, 0))
  let offset = 0
  for (const chunk of chunks) {
    out.set(chunk, offset)
    offset += chunk.length
  }
  return out
}

/** Undefined when equal, else a short description (printing megabytes of diff helps nobody). */
export const differenceOf = (actual: Uint8Array, expected: Uint8Array): string | undefined => {
  const common = Math.min(actual.length, expected.length)
  for (let i = 0; i < common; i++) {
    if (actual[i] !== expected[i]) return `bytes differ first at offset ${i} of ${expected.length}`
  }
  return actual.length === expected.length
    ? undefined
    : `got ${actual.length} bytes, expected ${expected.length}`
}

/** A deterministic permutation (Fisher–Yates driven by `seed`). */
export const shuffled = <A>(items: ReadonlyArray<A>, seed: number): Array<A> => {
  const out = [...items]
  const random = bytesOf(seed, out.length * 4)
  for (let i = out.length - 1; i > 0; i--) {
    const r = ((random[i * 4]! << 24) | (random[i * 4 + 1]! << 16) | (random[i * 4 + 2]! << 8) | random[i * 4 + 3]!) >>> 0
    const j = r % (i + 1)
    ;[out[i], out[j]] = [out[j]!, out[i]!]
  }
  return out
}
