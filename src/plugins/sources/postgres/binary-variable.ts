import { BinaryBuilder, ListBuilder } from "../../../core/columns/builders.js"
import { valueAppender } from "../../../core/columns/values.js"
import { DecodeFailure } from "./decode.js"
import type { ColumnPlan } from "./types.js"
import { badSize, builderSink, type FieldSink, int32At } from "./binary-wire.js"

/**
 * Binary COPY readers of variable-width values: bytes passed through (text, json, bytea, values the SELECT renders
 * as text), one-dimensional arrays as lists, and the slow path through a text decoder.
 */

/**
 * Copies `size` bytes at `b[at…]` into the builder as one value. Up to 64 bytes byte by byte: below that the loop is
 * cheaper than the `subarray` (a Buffer allocated per value) that `set` needs.
 */
const appendRange = (builder: BinaryBuilder, b: Uint8Array, at: number, size: number): void => {
  builder.reserve(size)
  const data = builder.data
  const end = builder.end
  if (size <= 64) for (let i = 0; i < size; i++) data[end + i] = b[at + i]!
  else data.set(b.subarray(at, at + size), end)
  builder.commit(size)
}

/** Bytes as they arrive: text, varchar, bpchar, name, enums, json, bytea, and columns rendered as text by the SELECT. */
export const passthrough = (skip: number, what: string) => (capacity: number): FieldSink => {
  const builder = new BinaryBuilder(capacity)
  return builderSink(builder, (b, at, size) => {
    if (skip === 1) {
      // jsonb: a format version byte, then the text.
      if (size < 1 || b[at] !== 1) throw new DecodeFailure(`unexpected binary ${what} format version ${b[at]}`)
    }
    appendRange(builder, b, at + skip, size - skip)
  })
}

const multiDimensional = (): DecodeFailure =>
  new DecodeFailure("multi-dimensional arrays are not supported", "unnest the array in SQL or cast it to text (col::text)")

/** A one-dimensional array (ndim, flags, element OID, [size, lower bound], then elements like fields) → a list. */
export const list = (element: (capacity: number) => FieldSink) => (capacity: number): FieldSink => {
  const child = element(capacity * 2)
  const builder = new ListBuilder(child, capacity)
  return builderSink(builder, (b, at, size) => {
    if (size < 12) throw badSize("array", size)
    const ndim = int32At(b, at)
    if (ndim > 1) throw multiDimensional()
    let pos = at + 12
    if (ndim === 1) {
      const count = int32At(b, pos)
      pos += 8
      const end = at + size
      for (let i = 0; i < count; i++) {
        if (pos + 4 > end) throw badSize("array", size)
        const length = int32At(b, pos)
        pos += 4
        if (length === -1) child.nul()
        else {
          if (pos + length > end) throw badSize("array", size)
          child.value(b, pos, length)
          pos += length
        }
      }
    }
    builder.endList()
  })
}

const textDecoder = new TextDecoder("utf-8", { ignoreBOM: true })

/**
 * The slow path for a column the SELECT renders as text and that needs today's text decoder (arrays of rendered
 * elements): one JS string per value, decoded by the plan's decoder and appended as a `Value`.
 */
export const decodedText = (plan: ColumnPlan) => (capacity: number): FieldSink => {
  let appender = valueAppender(plan.type, capacity)
  const decode = plan.decode
  let length = 0
  return {
    get length() {
      return length
    },
    value(b, at, size) {
      const text = textDecoder.decode(b.subarray(at, at + size))
      appender.append(decode === undefined ? text : decode(text))
      length++
    },
    nul() {
      appender.append(null)
      length++
    },
    finish: () => appender.finish(),
    reset() {
      appender = valueAppender(plan.type, Math.max(capacity, length))
      length = 0
    }
  }
}
