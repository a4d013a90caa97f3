const MIN_CAPACITY = 64 * 1024

/** Collects lines of text as UTF-8 bytes; `take` hands over what was written since the last `take`. */
export interface LineWriter {
  readonly write: (line: string) => void
  readonly take: () => ReadonlyArray<Uint8Array>
}

/**
 * A line writer that encodes each line straight into a growing buffer. Concatenating a whole batch into one
 * string first is 3× slower: V8 builds a rope of hundreds of thousands of pieces and then has to flatten it.
 * Each `take` starts a fresh buffer (the bytes handed over are never reused), sized from the previous batch.
 */
export const makeLineWriter = (): LineWriter => {
  let buffer = Buffer.allocUnsafe(MIN_CAPACITY)
  let used = 0
  return {
    write: (line) => {
      // A UTF-16 code unit never takes more than 3 bytes in UTF-8.
      const worst = used + line.length * 3
      if (worst > buffer.length) {
        const grown = Buffer.allocUnsafe(Math.max(buffer.length * 2, worst))
        buffer.copy(grown, 0, 0, used)
        buffer = grown
      }
      used += buffer.write(line, used, "utf8")
    },
    take: () => {
      if (used === 0) return []
      const bytes = buffer.subarray(0, used)
      buffer = Buffer.allocUnsafe(Math.max(MIN_CAPACITY, used + (used >> 3)))
      used = 0
      return [bytes]
    }
  }
}
