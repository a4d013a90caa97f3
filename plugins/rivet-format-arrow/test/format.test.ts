import { TimeUnit, Type, type Decimal, type Timestamp } from "apache-arrow"
import { FormatError, type LogicalType, type Value } from "rivet-export/plugin"
import { describe, expect, it } from "vitest"
import { decodeData, readArrow } from "./read-arrow.js"
import { encodeError, encodePart, tableOf } from "./support.js"

const TYPES = {
  i16: { kind: "int16" },
  i32: { kind: "int32" },
  i64: { kind: "int64" },
  f32: { kind: "float32" },
  f64: { kind: "float64" },
  dec: { kind: "decimal", precision: 12, scale: 2 },
  wide: { kind: "decimal", precision: 60, scale: 4 },
  int_dec: { kind: "decimal", precision: 20, scale: 0 },
  str: { kind: "string" },
  flag: { kind: "bool" },
  day: { kind: "date" },
  tod: { kind: "time" },
  ts: { kind: "timestamp" },
  tstz: { kind: "timestamptz" },
  id: { kind: "uuid" },
  doc: { kind: "json" },
  raw: { kind: "bytes" },
  span: { kind: "interval" },
  ints: { kind: "list", element: { kind: "int32" } },
  words: { kind: "list", element: { kind: "string" } },
  amounts: { kind: "list", element: { kind: "decimal", precision: 10, scale: 2 } },
  stamps: { kind: "list", element: { kind: "timestamptz" } },
  grid: { kind: "list", element: { kind: "list", element: { kind: "int64" } } }
} satisfies Record<string, LogicalType>

const ROWS: ReadonlyArray<Record<string, Value>> = [
  {
    i16: -32768, i32: 2147483647, i64: 9223372036854775807n, f32: 1.5, f64: 0.1, dec: "9999999999.99",
    wide: "-12345678901234567890123456789012345678901234567890123.4567", int_dec: "-99999999999999999999",
    str: "héllo 🌍", flag: true, day: -719162, tod: 86_399_999_999n, ts: -62_135_596_800_000_000n,
    tstz: 1_700_000_000_123_456n, id: "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11", doc: '{"n": 1.00000000000000000001}',
    raw: new Uint8Array([0, 255, 10, 13]), span: "P1Y2M3DT4H5M6.5S", ints: [1, null, -3], words: ["a", "", null],
    amounts: ["-0.01", null], stamps: [0n, -1n, null], grid: [[1n, 2n], null, []]
  },
  {
    i16: 32767, i32: -2147483648, i64: -9223372036854775808n, f32: -0.25, f64: Number.NaN, dec: "-0.01",
    wide: "0.0000", int_dec: "0", str: "", flag: false, day: 0, tod: 0n, ts: 0n, tstz: -1n,
    id: "00000000-0000-0000-0000-000000000000", doc: "[]", raw: new Uint8Array(0), span: "PT0S", ints: [], words: [],
    amounts: [], stamps: [], grid: []
  },
  Object.fromEntries(Object.keys(TYPES).map((name) => [name, null])),
  { f64: Number.POSITIVE_INFINITY, dec: "0.00", ints: [null], grid: [[null]] }
]

const expected = (name: keyof typeof TYPES) => ROWS.map((row) => row[name] ?? null)

describe("Arrow IPC format: every Rivet logical type", () => {
  it("reads back exactly what was written, NULLs included", async () => {
    const { schema, batch } = tableOf(TYPES, ROWS)
    const { bytes } = await encodePart(schema, [batch])
    const { table, columns } = readArrow(bytes, TYPES)
    expect(table.numRows).toBe(ROWS.length)
    for (const name of Object.keys(TYPES) as Array<keyof typeof TYPES>) {
      expect(columns[name], name).toEqual(expected(name))
    }
  })

  it("maps each logical type to the Arrow type documented in the README", async () => {
    const { schema, batch } = tableOf(TYPES, ROWS)
    const { table } = readArrow((await encodePart(schema, [batch])).bytes, TYPES)
    const typeOf = (name: string) => String(table.schema.fields.find((field) => field.name === name)!.type)
    expect(Object.fromEntries(Object.keys(TYPES).map((name) => [name, typeOf(name)]))).toEqual({
      i16: "Int16",
      i32: "Int32",
      i64: "Int64",
      f32: "Float32",
      f64: "Float64",
      dec: "Decimal[12e+2]",
      wide: "Decimal[60e+4]",
      int_dec: "Decimal[20e0]",
      str: "Utf8",
      flag: "Bool",
      day: "Date32<DAY>",
      tod: "Time64<MICROSECOND>",
      ts: "Timestamp<MICROSECOND>",
      tstz: "Timestamp<MICROSECOND, UTC>",
      id: "Utf8",
      doc: "Utf8",
      raw: "Binary",
      span: "Utf8",
      ints: "List<Int32>",
      words: "List<Utf8>",
      amounts: "List<Decimal[10e+2]>",
      stamps: "List<Timestamp<MICROSECOND, UTC>>",
      grid: "List<List<Int64>>"
    })
    const field = (name: string) => table.schema.fields.find((f) => f.name === name)!
    expect((field("dec").type as Decimal).bitWidth).toBe(128)
    expect((field("wide").type as Decimal).bitWidth).toBe(256)
    expect((field("ts").type as Timestamp).timezone ?? null).toBeNull()
    expect((field("tstz").type as Timestamp).unit).toBe(TimeUnit.MICROSECOND)
    expect(field("doc").metadata.get("rivet:logical_type")).toBe("json")
    expect(field("amounts").metadata.get("rivet:logical_type")).toBe("list<decimal(10,2)>")
    expect(table.schema.fields.every((f) => f.nullable)).toBe(true)
  })

  it("gives apache-arrow's own accessors native values: int64 as bigint, text, booleans, bytes", async () => {
    const { schema, batch } = tableOf(TYPES, ROWS)
    const { table } = readArrow((await encodePart(schema, [batch])).bytes, TYPES)
    expect(table.getChild("i64")!.type.typeId).toBe(Type.Int)
    expect(table.getChild("i64")!.get(0)).toBe(9223372036854775807n)
    expect(table.getChild("str")!.get(0)).toBe("héllo 🌍")
    expect(table.getChild("flag")!.get(1)).toBe(false)
    expect(table.getChild("raw")!.get(0)).toEqual(new Uint8Array([0, 255, 10, 13]))
    expect(table.getChild("day")!.get(1)).toBe(0)
    expect([...table.getChild("ints")!.get(0)!]).toEqual([1, null, -3])
    expect(table.getChild("i32")!.get(2)).toBeNull()
  })
})

describe("Arrow IPC format: files and streaming", () => {
  const types = { id: { kind: "int64" }, name: { kind: "string" } } satisfies Record<string, LogicalType>
  const batchOf = (start: number, count: number) =>
    tableOf(
      types,
      Array.from({ length: count }, (_, i) => ({ id: BigInt(start + i), name: `row ${start + i}` }))
    )

  it("writes an IPC file (Feather v2): ARROW1 magic at both ends, one record batch per Rivet batch", async () => {
    const batches = Array.from({ length: 5 }, (_, i) => batchOf(i * 100, 100).batch)
    const { bytes } = await encodePart(batchOf(0, 0).schema, batches)
    expect(bytes.subarray(0, 6).toString()).toBe("ARROW1")
    expect(bytes.subarray(-6).toString()).toBe("ARROW1")
    const { table, columns } = readArrow(bytes, types)
    expect(table.batches).toHaveLength(5)
    expect(columns["id"]).toEqual(Array.from({ length: 500 }, (_, i) => BigInt(i)))
  })

  it("hands each record batch's bytes over as soon as it is written, holding nothing back", async () => {
    const batches = Array.from({ length: 20 }, (_, i) => batchOf(i * 1000, 1000).batch)
    const { writes, footer, bytes } = await encodePart(batchOf(0, 0).schema, batches)
    const sizes = writes.map((chunks) => chunks.reduce((sum, chunk) => sum + chunk.length, 0))
    // Every write returns that batch's encoding (about the same size each time); the footer is small.
    for (const size of sizes) expect(size).toBeGreaterThan(10_000)
    expect(Math.max(...sizes.slice(1))).toBeLessThan(2 * Math.min(...sizes.slice(1)))
    expect(footer.reduce((sum, chunk) => sum + chunk.length, 0)).toBeLessThan(4096)
    expect(sizes.reduce((a, b) => a + b, 0) + footer.reduce((a, c) => a + c.length, 0)).toBe(bytes.length)
  })

  it("an encoder finished without any batch still makes a valid, empty file with the schema", async () => {
    const { bytes } = await encodePart(batchOf(0, 0).schema, [])
    const { table } = readArrow(bytes, types)
    expect(table.numRows).toBe(0)
    expect(table.schema.fields.map((field) => field.name)).toEqual(["id", "name"])
  })

  it("decodes sliced data correctly (the reader helper honours offsets)", async () => {
    const { bytes } = await encodePart(batchOf(0, 0).schema, [batchOf(0, 10).batch])
    const vector = readArrow(bytes, types).table.getChild("id")!.slice(3, 6)
    expect(vector.data.flatMap((data) => decodeData(data, types.id))).toEqual([3n, 4n, 5n])
  })
})

describe("Arrow IPC format: values it cannot hold are refused, never altered", () => {
  it("refuses a decimal wider than Decimal256 before anything is written, with a hint", async () => {
    const { schema, batch } = tableOf({ n: { kind: "decimal", precision: 80, scale: 2 } }, [{ n: "1.00" }])
    const error = await encodeError(schema, [batch])
    expect(error).toBeInstanceOf(FormatError)
    expect(error.message).toBe("column 'n': decimal(80,2) has a precision outside 1–76 (Arrow's Decimal256 limit)")
    expect(error.hint).toContain("columns:")
  })

  it.each([
    ["1.234", "1.234 has more than 2 fraction digits, which decimal(5,2) cannot hold exactly"],
    ["10000.00", "10000.00 does not fit decimal(5,2)"],
    ["NaN", "NaN cannot be stored in an Arrow decimal; override the column to { type: string } or float64"],
    ["12,5", 'expected decimal text such as -12.30, got "12,5"']
  ])("refuses decimal text %s", async (text, message) => {
    const { schema, batch } = tableOf({ n: { kind: "decimal", precision: 5, scale: 2 } }, [{ n: text }])
    const error = await encodeError(schema, [batch])
    expect(error).toBeInstanceOf(FormatError)
    expect(error.message).toBe(`cannot encode Arrow: ${message}`)
  })

  it("accepts extra zero fraction digits (1.500 in decimal(5,2))", async () => {
    const types = { n: { kind: "decimal", precision: 5, scale: 2 } } satisfies Record<string, LogicalType>
    const { schema, batch } = tableOf(types, [{ n: "1.500" }, { n: "-.5" }])
    expect(readArrow((await encodePart(schema, [batch])).bytes, types).columns["n"]).toEqual(["1.50", "-0.50"])
  })

  it("a value in the wrong representation (an int64 given as a JS number) never reaches the encoder", () => {
    expect(() => tableOf({ n: { kind: "int64" } }, [{ n: 5 }])).toThrow('column "n" (int64), row 1: expected a bigint, got number 5')
  })
})
