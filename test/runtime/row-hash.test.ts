import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type BatchSchema, type LogicalType, makeBatch, type Value } from "../../src/runtime/batch.js"
import { rowHashColumn } from "../../src/runtime/columns/row-hash.js"
import { partOf } from "../formats/roundtrip-arbitraries.js"

/**
 * An independent implementation of the row hash as docs/meta-columns.md specifies it — from `Value`s and BigInt
 * arithmetic, the way a reader in another language would write it — checked against the one over column buffers.
 */

const MASK64 = (1n << 64n) - 1n
const fnv1a64 = (bytes: ReadonlyArray<number>): bigint => {
  let hash = 0xcbf29ce484222325n
  for (const byte of bytes) hash = ((hash ^ BigInt(byte)) * 0x100000001b3n) & MASK64
  return hash
}
const signed = (unsigned: bigint): bigint => BigInt.asIntN(64, unsigned)

const le = (value: bigint, bytes: number): Array<number> =>
  Array.from({ length: bytes }, (_, i) => Number((BigInt.asUintN(bytes * 8, value) >> BigInt(8 * i)) & 0xffn))
const uint32 = (value: number) => le(BigInt(value), 4)
const utf8 = (text: string) => [...new TextEncoder().encode(text)]

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

const cellBytes = (type: LogicalType, value: Value): Array<number> => {
  if (value === null) return [0]
  const bytes = valueBytes(type, value)
  return [1, ...uint32(bytes.length), ...bytes]
}

const referenceHash = (schema: BatchSchema, row: ReadonlyArray<Value>): bigint =>
  signed(fnv1a64(schema.columns.flatMap((column, c) => cellBytes(column.type, row[c]!))))

const hashesOf = (schema: BatchSchema, rows: ReadonlyArray<ReadonlyArray<Value>>): Array<bigint> => {
  const batch = makeBatch(schema, schema.columns.map((_, c) => rows.map((row) => row[c]!)))
  return [...rowHashColumn(schema, batch.columns, batch.rowCount).values]
}

describe("row hash (_rivet_row_hash)", () => {
  it("the reference FNV-1a 64 gives the published test vectors", () => {
    expect(fnv1a64([])).toBe(0xcbf29ce484222325n)
    expect(fnv1a64(utf8("a"))).toBe(0xaf63dc4c8601ec8cn)
    expect(fnv1a64(utf8("foobar"))).toBe(0x85944171f73967e8n)
  })

  it("matches the documented worked example byte for byte", () => {
    // docs/meta-columns.md: (id int32 = 1, name string = 'a', note string = NULL)
    const schema: BatchSchema = {
      columns: [
        { name: "id", type: { kind: "int32" } },
        { name: "name", type: { kind: "string" } },
        { name: "note", type: { kind: "string" } }
      ]
    }
    const canonical = [...cellBytes({ kind: "int32" }, 1), ...cellBytes({ kind: "string" }, "a"), ...cellBytes({ kind: "string" }, null)]
    expect(Buffer.from(canonical).toString("hex")).toBe("01080000000100000000000000" + "010100000061" + "00")
    expect(hashesOf(schema, [[1, "a", null]])).toEqual([signed(fnv1a64(canonical))])
    expect(hashesOf(schema, [[1, "a", null]])).toEqual([-5697471324863807268n]) // 0xb0ee84043b84c0dc, as computed in docs/meta-columns.md
  })

  it("equals the reference for random batches of every logical type (lists of lists, NaN, -0, NULLs)", () => {
    fc.assert(
      fc.property(partOf(76), (part) => {
        for (const batch of part.batches) {
          const hashes = [...rowHashColumn(part.schema, batch.columns, batch.rowCount).values]
          const offset = part.batches.slice(0, part.batches.indexOf(batch)).reduce((sum, earlier) => sum + earlier.rowCount, 0)
          const expected = part.rows.slice(offset, offset + batch.rowCount).map((row) => referenceHash(part.schema, row))
          expect(hashes).toEqual(expected)
        }
      }),
      { numRuns: 300 }
    )
  })

  it("does not change when an integer column is widened, and tells NULL from an empty string and -0 from 0", () => {
    const as = (kind: "int16" | "int32" | "int64", value: number | bigint) =>
      hashesOf({ columns: [{ name: "n", type: { kind } }] }, [[value]])[0]
    expect(as("int16", -7)).toBe(as("int64", -7n))
    expect(as("int32", 123456)).toBe(as("int64", 123456n))
    const text = (value: string | null) => hashesOf({ columns: [{ name: "t", type: { kind: "string" } }] }, [[value]])[0]
    expect(text(null)).not.toBe(text(""))
    const float = (value: number) => hashesOf({ columns: [{ name: "f", type: { kind: "float64" } }] }, [[value]])[0]
    expect(float(-0)).not.toBe(float(0))
    const nan = new Float64Array(new BigUint64Array([0x7ff8000000000001n]).buffer)[0]!
    expect(float(nan)).toBe(float(Number.NaN))
  })
})
