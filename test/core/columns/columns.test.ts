import { describe, expect, it } from "vitest"
import { batchByteLength, type BatchSchema, batchToRows, columnValues, makeBatch, shortestFloat32, type Value } from "../../../src/core/batch.js"
import { BinaryBuilder, BoolBuilder, FixedBuilder, ListBuilder, NumberBuilder } from "../../../src/core/columns/builders.js"
import { dataBuffers, isValid } from "../../../src/core/columns/data.js"

describe("column builders (byte level)", () => {
  it("numbers: little-endian values, zero in null slots, a validity bitmap only once a null appears", () => {
    const builder = new NumberBuilder("int32", 1)
    builder.push(1)
    builder.push(-2)
    const noNulls = new NumberBuilder("int16", 1)
    noNulls.push(7)
    expect(noNulls.finish()).toMatchObject({ layout: "int16", length: 1, nullCount: 0, validity: undefined })
    builder.appendNull()
    for (let i = 0; i < 8; i++) builder.push(i)
    const column = builder.finish()
    expect(column.layout).toBe("int32")
    if (column.layout !== "int32") return
    expect([...new Uint8Array(column.values.buffer, 0, 12)]).toEqual([1, 0, 0, 0, 0xfe, 0xff, 0xff, 0xff, 0, 0, 0, 0])
    expect(column.values.length).toBe(11)
    // rows 0, 1 valid, 2 null, 3–10 valid: bits 11111011 then 00000111 (bits past the last row are zero)
    expect([...column.validity!]).toEqual([0b11111011, 0b00000111])
    expect(column.nullCount).toBe(1)
    expect(isValid(column, 2)).toBe(false)
    expect(isValid(column, 10)).toBe(true)
  })

  it("a slot can be written with wire bytes directly (big-endian source, little-endian column)", () => {
    const builder = new NumberBuilder("int64", 1)
    const wire = new Uint8Array([0x80, 0, 0, 0, 0, 0, 0, 1])
    const offset = builder.slot()
    for (let i = 0; i < 8; i++) builder.bytes[offset + i] = wire[7 - i]!
    const column = builder.finish()
    expect(column.layout === "int64" && column.values[0]).toBe(-9223372036854775807n)
  })

  it("binary: offsets and bytes, an empty range for NULL and for the empty string", () => {
    const builder = new BinaryBuilder(1, 1)
    builder.appendString("é")
    builder.appendNull()
    builder.appendString("")
    builder.appendBytes(new Uint8Array([9, 8, 7]), 1, 3)
    builder.reserve(2)
    builder.data[builder.end] = 65
    builder.data[builder.end + 1] = 66
    builder.commit(2)
    const column = builder.finish()
    expect([...column.offsets]).toEqual([0, 2, 2, 2, 4, 6])
    expect([...column.data]).toEqual([0xc3, 0xa9, 8, 7, 65, 66])
    expect([...column.validity!]).toEqual([0b00011101])
  })

  it("bools are bit-packed, uuids 16 bytes per row, lists offsets into a child", () => {
    const bools = new BoolBuilder()
    for (const value of [true, false, true, true, false, false, false, false, true]) bools.push(value)
    bools.appendNull()
    const b = bools.finish()
    expect([...b.values]).toEqual([0b00001101, 0b00000001])
    expect([...b.validity!]).toEqual([0xff, 0b01])

    const uuids = new FixedBuilder(16, 1)
    uuids.appendNull()
    uuids.bytes.fill(0xab, uuids.slot(), 32)
    const u = uuids.finish()
    expect(u.data.byteLength).toBe(32)
    expect([...u.data.subarray(0, 16)]).toEqual(new Array(16).fill(0))

    const child = new NumberBuilder("int16", 1)
    const lists = new ListBuilder(child)
    child.push(1)
    child.appendNull()
    lists.endList()
    lists.appendNull()
    lists.endList()
    const l = lists.finish()
    expect([...l.offsets]).toEqual([0, 2, 2, 2])
    expect(l.child.length).toBe(2)
    expect(l.child.nullCount).toBe(1)
  })

  it("finish hands out the builder's own buffer when at most an eighth is unused, else a trimmed copy", () => {
    const full = new NumberBuilder("int32", 8)
    for (let i = 0; i < 7; i++) full.push(i)
    const own = full.finish()
    expect(own.layout === "int32" && own.values.buffer).toBe(full.bytes.buffer) // 4 of 32 bytes unused: no copy
    expect(own.layout === "int32" && [...own.values]).toEqual([0, 1, 2, 3, 4, 5, 6])
    const sparse = new NumberBuilder("int32", 8)
    sparse.push(1)
    const trimmed = sparse.finish()
    expect(trimmed.layout === "int32" && trimmed.values.buffer).not.toBe(sparse.bytes.buffer)
    expect(trimmed.layout === "int32" && trimmed.values.buffer.byteLength).toBe(4)
  })

  it("reset starts the next batch on fresh buffers sized from the last one, leaving the finished column intact", () => {
    const text = new BinaryBuilder(2, 1)
    for (const value of ["alpha", null, "beta", "gamma"]) {
      if (value === null) text.appendNull()
      else text.appendString(value)
    }
    const first = text.finish()
    text.reset()
    expect(text.length).toBe(0)
    expect(text.offsets.length).toBe(5) // as many rows as the last batch
    expect(text.data.byteLength).toBe(64) // 14 bytes used, an eighth more, at least 64
    text.appendString("z")
    const second = text.finish()
    expect(Buffer.from(first.data).toString()).toBe("alphabetagamma")
    expect([...first.offsets]).toEqual([0, 5, 5, 9, 14])
    expect([...first.validity!]).toEqual([0b1101])
    expect(second).toMatchObject({ length: 1, nullCount: 0, validity: undefined })
    expect([...second.offsets, ...second.data]).toEqual([0, 1, 122])

    const list = new ListBuilder(new NumberBuilder("int64", 2), 2)
    list.child.pushBigInt(1n)
    list.endList()
    list.appendNull()
    list.finish()
    list.reset()
    expect([list.length, list.child.length]).toEqual([0, 0])
    list.child.pushBigInt(2n)
    list.endList()
    const next = list.finish()
    expect(next).toMatchObject({ length: 1, nullCount: 0 })
    expect(next.child.layout === "int64" && [...next.child.values]).toEqual([2n])

    const bools = new BoolBuilder(16)
    for (let i = 0; i < 20; i++) bools.push(true)
    bools.finish()
    bools.reset()
    expect(bools.bits.byteLength).toBe(3)
  })

  it("every buffer of a finished column stands alone (transferable) and is counted", () => {
    const batch = makeBatch(
      { columns: [{ name: "s", type: { kind: "string" } }, { name: "l", type: { kind: "list", element: { kind: "int64" } } }] },
      [["a", null], [[1n, 2n], null]]
    )
    const buffers = new Set<ArrayBufferLike>()
    for (const column of batch.columns) dataBuffers(column, buffers)
    expect(buffers.size).toBe(6)
    const total = [...buffers].reduce((sum, buffer) => sum + buffer.byteLength, 0)
    expect(batchByteLength(batch)).toBe(total)
  })
})

describe("values at the edge", () => {
  const schema: BatchSchema = {
    columns: [
      { name: "i2", type: { kind: "int16" } },
      { name: "i4", type: { kind: "int32" } },
      { name: "i8", type: { kind: "int64" } },
      { name: "f4", type: { kind: "float32" } },
      { name: "f8", type: { kind: "float64" } },
      { name: "n", type: { kind: "decimal", precision: 12, scale: 2 } },
      { name: "s", type: { kind: "string" } },
      { name: "b", type: { kind: "bool" } },
      { name: "d", type: { kind: "date" } },
      { name: "t", type: { kind: "time" } },
      { name: "ts", type: { kind: "timestamp" } },
      { name: "tz", type: { kind: "timestamptz" } },
      { name: "u", type: { kind: "uuid" } },
      { name: "j", type: { kind: "json" } },
      { name: "by", type: { kind: "bytes" } },
      { name: "iv", type: { kind: "interval" } },
      { name: "l", type: { kind: "list", element: { kind: "string" } } }
    ]
  }
  const rows = [
    {
      i2: -32768, i4: 2147483647, i8: -9223372036854775808n, f4: 1.1, f8: -0.1, n: "-12.30", s: "héllo 🎉", b: true,
      d: -719162, t: 86_399_999_999n, ts: -1n, tz: 1_706_067_200_123_456n, u: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11",
      j: '{"a": 1}', by: new Uint8Array([0, 255]), iv: "P1Y2M3DT4H5M6.5S", l: ["a", null, ""]
    },
    Object.fromEntries(schema.columns.map((column) => [column.name, null]))
  ]

  it("round-trip every logical type exactly through makeBatch and batchToRows", () => {
    const batch = makeBatch(schema, schema.columns.map((column) => rows.map((row) => (row as Record<string, Value>)[column.name] ?? null)))
    expect(batchToRows(batch)).toEqual(rows)
    expect(columnValues(batch.columns[3]!, schema.columns[3]!.type)).toEqual([1.1, null])
  })

  it("float32 values read back as the shortest decimal that identifies them", () => {
    for (const value of [1.1, 0.1, 3.4028235e38, 1e-45, 123456.79, -2.5]) {
      expect(shortestFloat32(Math.fround(value))).toBe(value)
    }
    expect(Object.is(shortestFloat32(-0), -0)).toBe(true)
    expect(shortestFloat32(NaN)).toBeNaN()
  })

  it("refuses a value in the wrong representation, naming the column and the row", () => {
    expect(() => makeBatch(schema, schema.columns.map((column) => (column.name === "u" ? [null, "nope"] : [null, null])))).toThrow(
      'column "u" (uuid), row 2: expected a UUID, got string "nope"'
    )
    expect(() => makeBatch({ columns: [{ name: "x", type: { kind: "int64" } }] }, [[2n ** 64n]])).toThrow("64-bit")
  })
})
