import type { ByteBuffer } from "./bytes.js"

/**
 * Parquet's RLE / bit-packing hybrid encoding (levels and dictionary indices): a run of 8 or more equal values
 * becomes an RLE run, everything else bit-packed groups of 8 values (the last group padded with zeros; the page
 * header's value count tells readers where the values end). `bitWidth` is at most 24.
 */
export const writeHybrid = (out: ByteBuffer, values: ArrayLike<number>, count: number, bitWidth: number): void => {
  let i = 0
  let packedFrom = -1
  while (i < count) {
    const value = values[i]!
    let run = 1
    while (i + run < count && values[i + run] === value) run++
    if (run >= 8) {
      if (packedFrom >= 0) writePacked(out, values, count, packedFrom, (i - packedFrom) >>> 3, bitWidth)
      packedFrom = -1
      writeRun(out, value, run, bitWidth)
      i += run
    } else {
      if (packedFrom < 0) packedFrom = i
      i += 8
    }
  }
  if (packedFrom >= 0) writePacked(out, values, count, packedFrom, Math.ceil((Math.min(i, count) - packedFrom) / 8), bitWidth)
}

const writeRun = (out: ByteBuffer, value: number, run: number, bitWidth: number): void => {
  out.varint(run * 2)
  for (let shift = 0; shift < bitWidth; shift += 8) out.u8((value >>> shift) & 0xff)
}

const writePacked = (out: ByteBuffer, values: ArrayLike<number>, count: number, from: number, groups: number, bitWidth: number): void => {
  out.varint(groups * 2 + 1)
  out.reserve(groups * bitWidth)
  const bytes = out.bytes
  let at = out.length
  let buffer = 0
  let bits = 0
  const end = from + groups * 8
  for (let i = from; i < end; i++) {
    buffer |= (i < count ? values[i]! : 0) << bits
    bits += bitWidth
    while (bits >= 8) {
      bytes[at++] = buffer & 0xff
      buffer >>>= 8
      bits -= 8
    }
  }
  out.length = at
}

/** Bits needed for values up to `max`. */
export const bitWidthOf = (max: number): number => (max === 0 ? 0 : 32 - Math.clz32(max))
