import { deserializeTCompactProtocol } from "hyparquet/src/thrift.js"

/** Per-column metrics of one data file, keyed by Iceberg field id, bounds in Iceberg's single-value encoding. */
export interface ColumnMetrics {
  readonly columnSizes: ReadonlyMap<number, number>
  readonly valueCounts: ReadonlyMap<number, number>
  readonly nullCounts: ReadonlyMap<number, number>
  readonly lowerBounds: ReadonlyMap<number, Uint8Array>
  readonly upperBounds: ReadonlyMap<number, Uint8Array>
}

export interface FooterFacts extends ColumnMetrics {
  readonly rowCount: number
}

// Thrift field numbers of parquet.thrift's FileMetaData, SchemaElement, ColumnMetaData and Statistics.
type ThriftStruct = { readonly [key: `field_${number}`]: unknown }

const PHYSICAL_INT32 = 1
const PHYSICAL_INT64 = 2
const PHYSICAL_FLOAT = 4
const PHYSICAL_DOUBLE = 5
const CONVERTED_DECIMAL = 5
const LOGICAL_DECIMAL = "field_5"

interface Leaf {
  readonly fieldId: number | undefined
  readonly physical: number
  readonly decimal: boolean
  /** Inside a list: Iceberg keeps no bounds for repeated values. */
  readonly repeated: boolean
}

const num = (value: unknown): number => (typeof value === "bigint" ? Number(value) : typeof value === "number" ? value : 0)

/** The leaves of a Parquet schema (root first, depth-first), in column-chunk order. */
const leavesOf = (elements: ReadonlyArray<ThriftStruct>): Array<Leaf> => {
  const leaves: Array<Leaf> = []
  let index = 1
  const walk = (repeated: boolean): void => {
    const element = elements[index++]!
    const children = num(element.field_5)
    const isRepeated = repeated || num(element.field_3) === 2
    if (children > 0) {
      for (let i = 0; i < children; i++) walk(isRepeated)
      return
    }
    const logical = element.field_10 as ThriftStruct | undefined
    leaves.push({
      fieldId: element.field_9 === undefined ? undefined : num(element.field_9),
      physical: num(element.field_1),
      decimal: num(element.field_6) === CONVERTED_DECIMAL || logical?.[LOGICAL_DECIMAL] !== undefined,
      repeated: isRepeated
    })
  }
  const rootChildren = num(elements[0]?.field_5)
  for (let i = 0; i < rootChildren; i++) walk(false)
  return leaves
}

const bigEndianSigned = (bytes: Uint8Array): bigint => {
  let value = 0n
  for (const byte of bytes) value = (value << 8n) | BigInt(byte)
  return bytes.length > 0 && bytes[0]! >= 0x80 ? value - (1n << BigInt(bytes.length * 8)) : value
}

/** An unscaled decimal as Iceberg stores it: two's-complement big-endian, in the fewest bytes. */
const minimalBigEndian = (value: bigint): Uint8Array => {
  const bytes: Array<number> = []
  let rest = value
  do {
    bytes.unshift(Number(rest & 0xffn))
    rest >>= 8n
  } while (!((rest === 0n && bytes[0]! < 0x80) || (rest === -1n && bytes[0]! >= 0x80)))
  return Uint8Array.from(bytes)
}

const view = (bytes: Uint8Array) => new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength)

/** A decimal statistic's unscaled value: Parquet stores INT32/INT64 decimals little-endian, fixed ones big-endian. */
const unscaled = (leaf: Leaf, bytes: Uint8Array): bigint =>
  leaf.physical === PHYSICAL_INT32 ? BigInt(view(bytes).getInt32(0, true)) : leaf.physical === PHYSICAL_INT64 ? view(bytes).getBigInt64(0, true) : bigEndianSigned(bytes)

const compareBytes = (a: Uint8Array, b: Uint8Array): number => {
  for (let i = 0; i < Math.min(a.length, b.length); i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return a.length - b.length
}

/** Orders two statistics of one leaf as its type orders values. */
const compare = (leaf: Leaf, a: Uint8Array, b: Uint8Array): number => {
  if (leaf.decimal) {
    const x = unscaled(leaf, a)
    const y = unscaled(leaf, b)
    return x < y ? -1 : x > y ? 1 : 0
  }
  switch (leaf.physical) {
    case PHYSICAL_INT32:
      return view(a).getInt32(0, true) - view(b).getInt32(0, true)
    case PHYSICAL_INT64: {
      const x = view(a).getBigInt64(0, true)
      const y = view(b).getBigInt64(0, true)
      return x < y ? -1 : x > y ? 1 : 0
    }
    case PHYSICAL_FLOAT:
      return view(a).getFloat32(0, true) - view(b).getFloat32(0, true)
    case PHYSICAL_DOUBLE:
      return view(a).getFloat64(0, true) - view(b).getFloat64(0, true)
    default:
      // BOOLEAN (one byte), BYTE_ARRAY and FIXED_LEN_BYTE_ARRAY (uuid): unsigned byte order.
      return compareBytes(a, b)
  }
}

/** A statistic in Iceberg's single-value encoding: the same bytes as Parquet's plain ones, but for decimals. */
const icebergBound = (leaf: Leaf, bytes: Uint8Array): Uint8Array =>
  leaf.decimal ? minimalBigEndian(unscaled(leaf, bytes)) : bytes.slice()

const add = (map: Map<number, number>, id: number, value: number) => map.set(id, (map.get(id) ?? 0) + value)

/** The length of the footer a file's last 8 bytes announce (`{footer}{length, 4 bytes LE}PAR1`). */
export const footerLength = (tail: Uint8Array): number => {
  if (tail.length < 8 || new TextDecoder().decode(tail.subarray(tail.length - 4)) !== "PAR1")
    throw new Error("the file does not end with Parquet's PAR1 magic")
  return view(tail).getUint32(tail.length - 8, true)
}

/**
 * A data file's row count and column metrics from its Parquet footer (`tail` ends with the file's last byte and
 * holds the whole footer): counts summed over row groups, bounds the least and greatest exact row-group statistics.
 */
export const footerFacts = (tail: Uint8Array): FooterFacts => {
  const length = footerLength(tail)
  const metadata = deserializeTCompactProtocol({ view: view(tail), offset: tail.length - 8 - length }) as ThriftStruct
  const leaves = leavesOf(metadata.field_2 as ReadonlyArray<ThriftStruct>)
  const columnSizes = new Map<number, number>()
  const valueCounts = new Map<number, number>()
  const nullCounts = new Map<number, number>()
  const lower = new Map<number, { leaf: Leaf; bytes: Uint8Array }>()
  const upper = new Map<number, { leaf: Leaf; bytes: Uint8Array }>()
  const noBounds = new Set<number>()
  for (const group of (metadata.field_4 as ReadonlyArray<ThriftStruct> | undefined) ?? []) {
    ;((group.field_1 as ReadonlyArray<ThriftStruct>) ?? []).forEach((chunk, i) => {
      const leaf = leaves[i]
      const meta = chunk.field_3 as ThriftStruct | undefined
      if (leaf?.fieldId === undefined || meta === undefined) return
      const id = leaf.fieldId
      add(columnSizes, id, num(meta.field_7))
      add(valueCounts, id, num(meta.field_5))
      const stats = meta.field_12 as ThriftStruct | undefined
      if (stats?.field_3 !== undefined) add(nullCounts, id, num(stats.field_3))
      if (leaf.repeated || noBounds.has(id)) return
      const min = stats?.field_6 as Uint8Array | undefined
      const max = stats?.field_5 as Uint8Array | undefined
      const rows = num(meta.field_5) - num(stats?.field_3)
      // A row group with values but no exact bound leaves the file without one: any bound kept would be wrong.
      if (rows > 0 && (min === undefined || max === undefined || stats?.field_8 === false || stats?.field_7 === false)) {
        noBounds.add(id)
        lower.delete(id)
        upper.delete(id)
        return
      }
      if (min === undefined || max === undefined) return
      const low = lower.get(id)
      if (low === undefined || compare(leaf, min, low.bytes) < 0) lower.set(id, { leaf, bytes: min })
      const high = upper.get(id)
      if (high === undefined || compare(leaf, max, high.bytes) > 0) upper.set(id, { leaf, bytes: max })
    })
  }
  const encoded = (bounds: Map<number, { leaf: Leaf; bytes: Uint8Array }>) =>
    new Map([...bounds].map(([id, { leaf, bytes }]) => [id, icebergBound(leaf, bytes)]))
  return {
    rowCount: num(metadata.field_3),
    columnSizes,
    valueCounts,
    nullCounts,
    lowerBounds: encoded(lower),
    upperBounds: encoded(upper)
  }
}
