import { describe, expect, it } from "@effect/vitest"
import { ByteBuffer } from "../../../../../src/plugins/formats/parquet/writer/bytes.js"
import { buildDictionary } from "../../../../../src/plugins/formats/parquet/writer/dictionary.js"
import { bitWidthOf, writeHybrid } from "../../../../../src/plugins/formats/parquet/writer/hybrid.js"
import { Levels } from "../../../../../src/plugins/formats/parquet/writer/levels.js"
import { bytesMinMax, floatMinMax, int64MinMax, wideDecimalMinMax } from "../../../../../src/plugins/formats/parquet/writer/statistics.js"
import { ThriftWriter } from "../../../../../src/plugins/formats/parquet/writer/thrift.js"
import { prepareColumn } from "../../../../../src/plugins/formats/parquet/columns.js"
import { type LogicalType, makeBatch, type Value } from "../../../../../src/core/batch.js"

const columnOf = (type: LogicalType, values: ReadonlyArray<Value>) =>
  makeBatch({ columns: [{ name: "c", type }] }, [values]).columns[0]!

const bytesOf = (write: (out: ByteBuffer) => void): Array<number> => {
  const out = new ByteBuffer(1)
  write(out)
  return [...out.written()]
}

describe("parquet writer: byte level", () => {
  it("RLE / bit-packing hybrid: runs of 8+ as RLE, the rest as padded groups of 8", () => {
    // 10 ones: one RLE run (header 10 << 1, value in one byte).
    expect(bytesOf((out) => writeHybrid(out, new Uint8Array(10).fill(1), 10, 1))).toEqual([20, 1])
    // 1 0 1 1 then 12 zeros: a bit-packed group of 8 (header 1 << 1 | 1) holding 1,0,1,1,0,0,0,0, then RLE of 8 zeros.
    const mixed = Uint8Array.of(1, 0, 1, 1, ...Array<number>(12).fill(0))
    expect(bytesOf((out) => writeHybrid(out, mixed, 16, 1))).toEqual([3, 0b00001101, 16, 0])
    // A short tail after a group is packed too, padded to 8 values: two groups.
    expect(bytesOf((out) => writeHybrid(out, mixed, 12, 1))).toEqual([5, 0b00001101, 0])
    // Width 3, three values: one group padded with zeros, 3 bytes.
    expect(bytesOf((out) => writeHybrid(out, Uint32Array.of(1, 2, 7), 3, 3))).toEqual([3, 0b11010001, 0b00000001, 0])
    // A 300-value run needs a two-byte varint header; a 9-bit value takes two bytes.
    expect(bytesOf((out) => writeHybrid(out, new Uint32Array(300).fill(257), 300, 9))).toEqual([0xd8, 0x04, 1, 1])
    expect([0, 1, 2, 3, 255, 256].map(bitWidthOf)).toEqual([0, 1, 2, 2, 8, 9])
  })

  it("thrift compact protocol: field deltas, long jumps, zigzag ints, lists and nested structs", () => {
    const bytes = bytesOf((out) => {
      const thrift = new ThriftWriter(out)
      thrift.structBody(() => {
        thrift.i32(1, -3)
        thrift.i64(3, 300)
        thrift.bool(4, true)
        thrift.i8(20, 16)
        thrift.struct(21, () => thrift.string(1, "é"))
        thrift.i32List(22, [1, 2])
      })
    })
    expect(bytes).toEqual([
      0x15, 5, // field 1, i32, zigzag(-3) = 5
      0x26, 0xd8, 0x04, // field 3 (delta 2), i64, zigzag(300) = 600
      0x11, // field 4, boolean true
      0x03, 40, 16, // field 20 (delta 16 > 15): type byte, zigzag id, then the i8
      0x1c, 0x18, 2, 0xc3, 0xa9, 0, // field 21, struct { field 1 binary "é" } stop
      0x19, 0x25, 2, 4, // field 22, list of 2 i32: 1, 2
      0 // stop
    ])
  })

  it("levels: flat columns from the validity bitmap, lists as Dremel repetition/definition levels", () => {
    const flat = new Levels()
    flat.appendFlat(columnOf({ kind: "int32" }, [1, null, 3]), 0, 3)
    flat.appendFlat(columnOf({ kind: "int32" }, [4, 5]), 1, 2)
    expect([...flat.def.subarray(0, flat.length)]).toEqual([1, 0, 1, 1])

    const nested = new Levels()
    const list = columnOf({ kind: "list", element: { kind: "int32" } }, [[1, null, 2], [], null, [3]])
    nested.appendNested(list, 0, 4)
    expect([...nested.rep.subarray(0, nested.length)]).toEqual([0, 1, 1, 0, 0, 0])
    expect([...nested.def.subarray(0, nested.length)]).toEqual([3, 2, 3, 1, 0, 3])

    const deep = new Levels()
    const grid = columnOf({ kind: "list", element: { kind: "list", element: { kind: "int32" } } }, [[[1, 2], [], null], [[3]]])
    deep.appendNested(grid, 0, 2)
    expect([...deep.rep.subarray(0, deep.length)]).toEqual([0, 2, 1, 1, 0])
    expect([...deep.def.subarray(0, deep.length)]).toEqual([5, 5, 3, 2, 5])
  })

  it("statistics order values as their logical type does and skip NULLs and NaN", () => {
    const ints = int64MinMax(undefined)
    ints.add(columnOf({ kind: "int64" }, [5n, null, -(2n ** 63n), 2n ** 32n, -1n]), undefined, 0, 5)
    const { min, max } = ints.result()
    expect(new BigInt64Array(min!.slice().buffer)[0]).toBe(-(2n ** 63n))
    expect(new BigInt64Array(max!.slice().buffer)[0]).toBe(2n ** 32n)

    const floats = floatMinMax(8)
    floats.add(columnOf({ kind: "float64" }, [Number.NaN, 0, 2.5, null]), undefined, 0, 4)
    const bounds = floats.result()
    expect(Object.is(new Float64Array(bounds.min!.slice().buffer)[0], -0)).toBe(true)
    expect(new Float64Array(bounds.max!.slice().buffer)[0]).toBe(2.5)
    const onlyNaN = floatMinMax(4)
    onlyNaN.add(columnOf({ kind: "float32" }, [Number.NaN]), undefined, 0, 1)
    expect(onlyNaN.result()).toEqual({})

    // Unsigned bytewise: "é" (0xc3 0xa9) sorts after "z"; a prefix sorts first.
    const text = bytesMinMax()
    text.add(columnOf({ kind: "string" }, ["z", "é", null, "ab", "a"]), undefined, 0, 5)
    text.add(columnOf({ kind: "string" }, ["0"]), undefined, 0, 1)
    const textBounds = text.result()
    expect(new TextDecoder().decode(textBounds.min)).toBe("0")
    expect(new TextDecoder().decode(textBounds.max)).toBe("é")

    // Long bounds are cut to 16 bytes: the min to its prefix, the max to a prefix with its last byte raised.
    const long = bytesMinMax()
    long.add(columnOf({ kind: "string" }, ["a".repeat(20), "b".repeat(22)]), undefined, 0, 2)
    const cut = long.result()
    expect(new TextDecoder().decode(cut.min)).toBe("a".repeat(16))
    expect(new TextDecoder().decode(cut.max)).toBe("b".repeat(15) + "c")
    expect([cut.minExact, cut.maxExact]).toEqual([false, false])
    const ones = bytesMinMax()
    ones.add(columnOf({ kind: "bytes" }, [new Uint8Array(20).fill(0xff)]), undefined, 0, 1)
    expect(ones.result().max!.length).toBe(20)
    expect(ones.result().maxExact).toBeUndefined()

    const type: LogicalType = { kind: "decimal", precision: 30, scale: 2 }
    const data = columnOf(type, ["-1.00", "12345678901234567890.12", "0.01", null])
    const decimals = wideDecimalMinMax(4, 13)
    decimals.add(data, prepareColumn(type)(data), 0, 4)
    const decimalBounds = decimals.result()
    expect([...decimalBounds.min!]).toEqual([...Array<number>(12).fill(0xff), 0x9c])
    expect(decimalBounds.max!.length).toBe(13)
  })

  it("a dictionary keeps first-seen order and gives up on mostly unique values", () => {
    const data = columnOf({ kind: "string" }, ["b", "a", null, "b", "", "a"])
    if (data.layout !== "binary") throw new Error("expected binary")
    const dictionary = buildDictionary([{ data, from: 0, to: 6 }], 5)!
    expect(dictionary.size).toBe(3)
    expect([...dictionary.indices]).toEqual([0, 1, 0, 2, 1])
    expect([...dictionary.page.written()]).toEqual([1, 0, 0, 0, 98, 1, 0, 0, 0, 97, 0, 0, 0, 0])

    const unique = columnOf({ kind: "string" }, Array.from({ length: 3000 }, (_, i) => `value ${i}`))
    if (unique.layout !== "binary") throw new Error("expected binary")
    expect(buildDictionary([{ data: unique, from: 0, to: 3000 }], 3000)).toBeUndefined()
  })
})
