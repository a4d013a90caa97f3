import type { BatchSchema, LogicalType, Value } from "../../src/core/batch.js"

/**
 * The row hash (`_rivet_row_hash`) as docs/meta-columns.md specifies it, from `Value`s with BigInt arithmetic —
 * the way a reader in another language would write it; independent of the implementation over column buffers.
 */

const MASK64 = (1n << 64n) - 1n
export const fnv1a64 = (bytes: ReadonlyArray<number>): bigint => {
  let hash = 0xcbf29ce484222325n
  for (const byte of bytes) hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & MASK64
  return hash
}
export const signed = (unsigned: bigint): bigint => BigInt.asIntN(64, unsigned)

const le = (value: bigint, bytes: number): Array<number> =>
  Array.from({ length: bytes }, (_, i) => Number((BigInt.asUintN(bytes * 8, value) >> BigInt(8 * i)) & 0xffn))
const uint32 = (value: number) => le(BigInt(value), 4)
export const utf8 = (text: string) => [...new TextEncoder().encode(text)]

const floatBytes = (value: number, width: 4 | 8): Array<number> => {
  if (Number.isNaN(value)) return width === 4 ? [0x00, 0x00, 0xc0, 0x7f] : [0, 0, 0, 0, 0, 0, 0xf8, 0x7f]
  const view = new DataView(new ArrayBuffer(width))
  if (width === 4) view.setFloat32(0, value, true)
  else view.setFloat64(0, value, true)
  return [...new Uint8Array(view.buffer)]
}

const uuidBytes = (text: string) => (text.replaceAll("-", "").match(/../g) ?? []).map((pair) => parseInt(pair, 16))

const valueBytes = (type: LogicalType, value: Exclude<Value, null>): Array<number> => {
  switch (type.kind) {
    case "int16":
    case "int32":
      return le(BigInt(value as number), 8)
    case "int64":
    case "time":
    case "timestamp":
    case "timestamptz":
      return le(value as bigint, 8)
    case "date":
      return le(BigInt(value as number), 4)
    case "float32":
      return floatBytes(value as number, 4)
    case "float64":
      return floatBytes(value as number, 8)
    case "bool":
      return [value ? 1 : 0]
    case "uuid":
      return uuidBytes(value as string)
    case "bytes":
      return [...(value as Uint8Array)]
    case "list": {
      const items = value as ReadonlyArray<Value>
      return [...uint32(items.length), ...items.flatMap((item) => cellBytes(type.element, item))]
    }
    default:
      return utf8(value as string)
  }
}

export const cellBytes = (type: LogicalType, value: Value): Array<number> => {
  if (value === null) return [0]
  const bytes = valueBytes(type, value)
  return [1, ...uint32(bytes.length), ...bytes]
}

/** The signed 64-bit hash of one row of `schema`. */
export const referenceHash = (schema: BatchSchema, row: ReadonlyArray<Value>): bigint =>
  signed(fnv1a64(schema.columns.flatMap((column, c) => cellBytes(column.type, row[c]!))))

