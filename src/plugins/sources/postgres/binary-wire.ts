import type { ColumnData } from "../../../core/columns/data.js"
import { DecodeFailure } from "./decode.js"

/** Reading PostgreSQL's big-endian binary wire values: the pieces the field decoders share. */

/** Where one column's wire values go: a column builder behind a decoder. */
export interface FieldSink {
  /** Rows appended so far. */
  readonly length: number
  /** Appends the value whose wire bytes are `bytes[at, at + size)`. Throws `DecodeFailure`. */
  value(bytes: Uint8Array, at: number, size: number): void
  nul(): void
  finish(): ColumnData
  /** Starts the next batch after `finish()`, with buffers sized from the batch just finished. */
  reset(): void
}

/** The column builders behind field sinks (see builders.ts). */
interface SinkBuilder {
  readonly length: number
  appendNull(): void
  finish(): ColumnData
  reset(): void
}

/** The sink that appends each value to `builder` with `value` (which throws `DecodeFailure` for a bad one). */
export const builderSink = (builder: SinkBuilder, value: (bytes: Uint8Array, at: number, size: number) => void): FieldSink => ({
  get length() {
    return builder.length
  },
  value,
  nul: () => builder.appendNull(),
  finish: () => builder.finish(),
  reset: () => builder.reset()
})

export const badSize = (what: string, size: number): DecodeFailure =>
  new DecodeFailure(`unexpected binary ${what} value of ${size} bytes`)

export const int32At = (b: Uint8Array, at: number): number => (b[at]! << 24) | (b[at + 1]! << 16) | (b[at + 2]! << 8) | b[at + 3]!
export const uint32At = (b: Uint8Array, at: number): number => int32At(b, at) >>> 0
export const int16At = (b: Uint8Array, at: number): number => ((b[at]! << 24) | (b[at + 1]! << 16)) >> 16
export const uint16At = (b: Uint8Array, at: number): number => (b[at]! << 8) | b[at + 1]!

// Scratch for reading floats and 64-bit integers without a DataView per chunk.
export const scratch = new Uint8Array(8)
export const scratchF32 = new Float32Array(scratch.buffer, 0, 1)
export const scratchI64 = new BigInt64Array(scratch.buffer, 0, 1)

/** Reverses `width` big-endian wire bytes into `target[offset…]` (little-endian, as typed arrays read them). */
export const swapInto = (target: Uint8Array, offset: number, b: Uint8Array, at: number, width: number): void => {
  for (let i = 0; i < width; i++) target[offset + i] = b[at + width - 1 - i]!
}

/** The exact value of a big-endian int64 at `b[at…]`: a number when safe, else a bigint. */
export const int64At = (b: Uint8Array, at: number): number | bigint => {
  const hi = int32At(b, at)
  const lo = uint32At(b, at + 4)
  if (hi >= -0x200000 && hi < 0x200000) return hi * 2 ** 32 + lo
  swapInto(scratch, 0, b, at, 8)
  return scratchI64[0]!
}

/** Writes the decimal digits of a safe integer (with its sign) at `data[at…]`, returns the end. */
export const writeInteger = (data: Uint8Array, at: number, value: number): number => {
  if (value < 0) {
    data[at++] = 45
    value = -value
  }
  let digits = 1
  for (let rest = value; rest >= 10; rest = Math.floor(rest / 10)) digits++
  for (let k = digits - 1; k >= 0; k--) {
    data[at + k] = 48 + (value % 10)
    value = Math.floor(value / 10)
  }
  return at + digits
}

