import { closeSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from "node:fs"
import { tmpdir } from "node:os"
import { join } from "node:path"
import type { Value } from "../../core/batch.js"

/** Hashes held in memory before a sorted run is spilled to disk: 1 Mi × 8 bytes = 8 MiB per column. */
const RUN_LENGTH = 1 << 20
/** The buffer starts this small and doubles up to RUN_LENGTH: a counter per chunk attempt must stay cheap. */
const INITIAL_LENGTH = 1 << 12
/** Hashes read per run at a time while merging. */
const READ_BLOCK = 1 << 13

/** Two 32-bit multiplicative string hashes with different seeds, joined into one 64-bit value. */
const hash64 = (text: string): bigint => {
  let h1 = 0xdeadbeef
  let h2 = 0x41c6ce57
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ code, 2654435761)
    h2 = Math.imul(h2 ^ code, 1597334677)
  }
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  return (BigInt(h1 >>> 0) << 32n) | BigInt(h2 >>> 0)
}

const textOf = (value: Value): string => {
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString("hex")
  if (Array.isArray(value)) return JSON.stringify(value, (_key, item: unknown) => (typeof item === "bigint" ? `${item}n` : item))
  return typeof value === "string" ? value : String(value)
}

/**
 * Counts duplicate non-NULL values of one column with bounded memory: each value becomes a 64-bit hash; hashes
 * are collected in a fixed 8 MiB buffer that is sorted and spilled to a temp file whenever it fills, and the sorted
 * runs are merged at the end, where equal neighbours are duplicates. Memory stays at one buffer plus a small read
 * block per run, whatever the row count. Two different values share a hash with probability ≈ n²/2⁶⁵ (3·10⁻⁶ at
 * 10 million rows), which could only report a duplicate that is not there — never miss one.
 */
export class UniqueCounter {
  private buffer: BigUint64Array
  private length = 0
  private runs: Array<{ readonly path: string; readonly count: number }> = []
  /** Where this counter spills; `dirs` also holds the directories of counters it adopted. */
  private dir: string | undefined
  private dirs: Array<string> = []

  constructor(private readonly runLength: number = RUN_LENGTH) {
    this.buffer = new BigUint64Array(Math.min(INITIAL_LENGTH, runLength))
  }

  add(value: Value): void {
    if (value === null) return
    this.addHash(hash64(textOf(value)))
  }

  /**
   * Takes over every value another counter has seen (its spilled runs and their files included), leaving it empty:
   * a chunk or page counts into a counter of its own, adopted only when the unit succeeds.
   */
  adopt(other: UniqueCounter): void {
    for (let i = 0; i < other.length; i++) this.addHash(other.buffer[i]!)
    this.runs.push(...other.runs)
    this.dirs.push(...other.dirs)
    other.length = 0
    other.runs = []
    other.dirs = []
    other.dir = undefined
  }

  private addHash(hash: bigint): void {
    if (this.length === this.buffer.length) {
      const grown = new BigUint64Array(Math.min(this.buffer.length * 2, this.runLength))
      grown.set(this.buffer)
      this.buffer = grown
    }
    this.buffer[this.length++] = hash
    if (this.length === this.runLength) this.spill()
  }

  private spill(): void {
    const run = this.buffer.subarray(0, this.length).sort()
    if (this.dir === undefined) {
      this.dir = mkdtempSync(join(tmpdir(), "rivet-unique-"))
      this.dirs.push(this.dir)
    }
    const path = join(this.dir, `run${this.runs.length}`)
    const fd = openSync(path, "w")
    try {
      writeSync(fd, new Uint8Array(run.buffer, run.byteOffset, run.byteLength))
    } finally {
      closeSync(fd)
    }
    this.runs.push({ path, count: this.length })
    this.length = 0
  }

  /** How many values repeat an earlier one. Releases the temp files. */
  duplicates(): number {
    try {
      if (this.runs.length === 0) return countEqualNeighbours(this.buffer.subarray(0, this.length).sort())
      if (this.length > 0) this.spill()
      return this.mergeRuns()
    } finally {
      this.close()
    }
  }

  /** Removes the spill files (also after a failed run or attempt). */
  close(): void {
    for (const dir of this.dirs) rmSync(dir, { recursive: true, force: true })
    this.dir = undefined
    this.dirs = []
    this.runs = []
  }

  private mergeRuns(): number {
    const readers = this.runs.map((run) => new RunReader(run.path, run.count))
    try {
      let duplicates = 0
      let previous: bigint | undefined
      for (;;) {
        let smallest: RunReader | undefined
        for (const reader of readers) {
          const head = reader.head()
          if (head !== undefined && (smallest === undefined || head < smallest.head()!)) smallest = reader
        }
        if (smallest === undefined) return duplicates
        const value = smallest.take()
        if (value === previous) duplicates++
        previous = value
      }
    } finally {
      for (const reader of readers) reader.close()
    }
  }
}

const countEqualNeighbours = (sorted: BigUint64Array): number => {
  let duplicates = 0
  for (let i = 1; i < sorted.length; i++) if (sorted[i] === sorted[i - 1]) duplicates++
  return duplicates
}

class RunReader {
  private readonly fd: number
  private readonly block = new BigUint64Array(READ_BLOCK)
  private blockLength = 0
  private position = 0
  private consumed = 0

  constructor(
    path: string,
    private readonly count: number
  ) {
    this.fd = openSync(path, "r")
  }

  head(): bigint | undefined {
    if (this.position === this.blockLength) {
      const remaining = this.count - this.consumed
      if (remaining === 0) return undefined
      const wanted = Math.min(READ_BLOCK, remaining)
      const bytes = new Uint8Array(this.block.buffer, 0, wanted * 8)
      let read = 0
      while (read < bytes.length) read += readSync(this.fd, bytes, read, bytes.length - read, null)
      this.blockLength = wanted
      this.position = 0
      this.consumed += wanted
    }
    return this.block[this.position]
  }

  take(): bigint {
    return this.block[this.position++]!
  }

  close(): void {
    closeSync(this.fd)
  }
}
