import * as fc from "fast-check"
import { describe, expect, it } from "vitest"
import { type BatchSchema, makeBatch, type Value } from "../../../src/core/batch.js"
import { rowHashColumn } from "../../../src/core/columns/row-hash.js"
import { partOf } from "../../plugins/formats/roundtrip-arbitraries.js"
import { cellBytes, fnv1a64, referenceHash, signed, utf8 } from "../../support/row-hash-reference.js"

// The row hash over column buffers, against an independent implementation of docs/meta-columns.md.

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
