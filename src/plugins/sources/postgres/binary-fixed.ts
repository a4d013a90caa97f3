import { shortestFloat32 } from "../../../core/batch.js"
import { BoolBuilder, FixedBuilder, NumberBuilder } from "../../../core/columns/builders.js"
import { DecodeFailure } from "./decode.js"
import { badSize, builderSink, type FieldSink, int16At, int32At, scratch, scratchF32, swapInto, uint32At } from "./binary-wire.js"

/**
 * Binary COPY readers of fixed-width values — integers, floats, bool, date, time, timestamp(tz), uuid — byte-swapped
 * or converted straight into the builders' buffers.
 */

const INFINITY_HINT = "filter it out or replace it in SQL, e.g. NULLIF(col, 'infinity')"

const infinite = (text: string): DecodeFailure =>
  new DecodeFailure(`value ${text} has no representation outside PostgreSQL`, INFINITY_HINT)

const writeInt32LE = (target: Uint8Array, offset: number, value: number): void => {
  target[offset] = value & 0xff
  target[offset + 1] = (value >>> 8) & 0xff
  target[offset + 2] = (value >>> 16) & 0xff
  target[offset + 3] = (value >>> 24) & 0xff
}

/** Same-width integers and floats, and `time` (µs since midnight in both). */
export const swapped = (layout: "int16" | "int32" | "int64" | "float32" | "float64", what: string) => (capacity: number): FieldSink => {
  const builder = new NumberBuilder(layout, capacity)
  const width = builder.width
  // One closure per width, the bytes moved unrolled: most of bench_2m's fixed-width columns come through here.
  if (width === 8) {
    return builderSink(builder, (b, at, size) => {
      if (size !== 8) throw badSize(what, size)
      const o = builder.slot()
      const t = builder.bytes
      t[o] = b[at + 7]!
      t[o + 1] = b[at + 6]!
      t[o + 2] = b[at + 5]!
      t[o + 3] = b[at + 4]!
      t[o + 4] = b[at + 3]!
      t[o + 5] = b[at + 2]!
      t[o + 6] = b[at + 1]!
      t[o + 7] = b[at]!
    })
  }
  if (width === 4) {
    return builderSink(builder, (b, at, size) => {
      if (size !== 4) throw badSize(what, size)
      const o = builder.slot()
      const t = builder.bytes
      t[o] = b[at + 3]!
      t[o + 1] = b[at + 2]!
      t[o + 2] = b[at + 1]!
      t[o + 3] = b[at]!
    })
  }
  return builderSink(builder, (b, at, size) => {
    if (size !== width) throw badSize(what, size)
    const offset = builder.slot()
    swapInto(builder.bytes, offset, b, at, width)
  })
}

/** A wider integer target (int2 → int32 / int64, int4 and oid → int64): sign- or zero-extended. */
export const widened = (layout: "int32" | "int64", wireWidth: 2 | 4, unsigned: boolean, what: string) => (capacity: number): FieldSink => {
  const builder = new NumberBuilder(layout, capacity)
  return builderSink(builder, (b, at, size) => {
    if (size !== wireWidth) throw badSize(what, size)
    const value = wireWidth === 2 ? int16At(b, at) : unsigned ? uint32At(b, at) : int32At(b, at)
    const offset = builder.slot()
    writeInt32LE(builder.bytes, offset, value)
    if (layout === "int64") writeInt32LE(builder.bytes, offset + 4, unsigned || value >= 0 ? 0 : -1)
  })
}

/** int2, int4, float4 → float64 (the `float64` override). */
export const toFloat64 = (wire: "int2" | "int4" | "float4") => (capacity: number): FieldSink => {
  const builder = new NumberBuilder("float64", capacity)
  const width = wire === "int2" ? 2 : 4
  return builderSink(builder, (b, at, size) => {
    if (size !== width) throw badSize(wire, size)
    let value: number
    if (wire === "int2") value = int16At(b, at)
    else if (wire === "int4") value = int32At(b, at)
    else {
      swapInto(scratch, 0, b, at, 4)
      value = shortestFloat32(scratchF32[0]!)
    }
    const offset = builder.slot()
    builder.view.setFloat64(offset, value, true)
  })
}

export const bool = (capacity: number): FieldSink => {
  const builder = new BoolBuilder(capacity)
  return builderSink(builder, (b, at, size) => {
    if (size !== 1) throw badSize("bool", size)
    builder.push(b[at] !== 0)
  })
}

/** PostgreSQL counts days from 2000-01-01. */
const PG_EPOCH_DAYS = 10957

export const date = (capacity: number): FieldSink => {
  const builder = new NumberBuilder("int32", capacity)
  return builderSink(builder, (b, at, size) => {
    if (size !== 4) throw badSize("date", size)
    const days = int32At(b, at)
    if (days === 0x7fffffff) throw infinite("infinity")
    if (days === -0x80000000) throw infinite("-infinity")
    const offset = builder.slot()
    writeInt32LE(builder.bytes, offset, days + PG_EPOCH_DAYS)
  })
}

// 946 684 800 000 000 µs from 1970-01-01 to 2000-01-01, split into 32-bit halves for carry arithmetic.
const PG_EPOCH_US = 946_684_800_000_000
const EPOCH_HI = Math.floor(PG_EPOCH_US / 2 ** 32)
const EPOCH_LO = PG_EPOCH_US - EPOCH_HI * 2 ** 32

/** timestamp / timestamptz: µs since 2000 → µs since 1970, in 32-bit halves (no BigInt per value). */
export const timestamp = (capacity: number): FieldSink => {
  const builder = new NumberBuilder("int64", capacity)
  return builderSink(builder, (b, at, size) => {
    if (size !== 8) throw badSize("timestamp", size)
    const hi = int32At(b, at)
    const lo = uint32At(b, at + 4)
    if (hi === 0x7fffffff && lo === 0xffffffff) throw infinite("infinity")
    if (hi === -0x80000000 && lo === 0) throw infinite("-infinity")
    const low = lo + EPOCH_LO
    const carry = low >= 2 ** 32 ? 1 : 0
    const high = hi + EPOCH_HI + carry
    // PostgreSQL counts from 2000: its last ~30 years (after 294247-01-10) overflow 64-bit microseconds since 1970.
    if (high > 0x7fffffff) throw new DecodeFailure("timestamp is beyond 64-bit microseconds since 1970")
    const offset = builder.slot()
    writeInt32LE(builder.bytes, offset, carry === 1 ? low - 2 ** 32 : low)
    writeInt32LE(builder.bytes, offset + 4, high)
  })
}

export const uuid = (capacity: number): FieldSink => {
  const builder = new FixedBuilder(16, capacity)
  return builderSink(builder, (b, at, size) => {
    if (size !== 16) throw badSize("uuid", size)
    const offset = builder.slot()
    const target = builder.bytes
    for (let i = 0; i < 16; i++) target[offset + i] = b[at + i]!
  })
}
