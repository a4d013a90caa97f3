import { describe, expect, it } from "@effect/vitest"
import { InvalidValue, prepareColumn, sliceByteLength } from "../../../../src/plugins/formats/parquet/columns.js"
import { limbsToBigEndian, parseDecimal } from "../../../../src/plugins/formats/parquet/decimal.js"
import { ByteBuffer } from "../../../../src/plugins/formats/parquet/writer/bytes.js"
import { leafPlan } from "../../../../src/plugins/formats/parquet/writer/leaf.js"
import { packBooleans } from "../../../../src/plugins/formats/parquet/writer/plain.js"
import { type ColumnData, type LogicalType, makeBatch, type Value } from "../../../../src/core/batch.js"

const columnOf = (type: LogicalType, values: ReadonlyArray<Value>) =>
  makeBatch({ columns: [{ name: "c", type }] }, [values]).columns[0]!

const innermost = (data: ColumnData): ColumnData => (data.layout === "list" ? innermost(data.child) : data)

/** The PLAIN bytes of the (innermost) values `[from, to)` of a column, NULLs skipped. */
const convert = (type: LogicalType, values: ReadonlyArray<Value>, from?: number, to?: number): Array<number> => {
  const column = columnOf(type, values)
  const words = prepareColumn(type)(column)
  const data = innermost(column)
  const leaf = leafPlan("c", type)
  const out = new ByteBuffer(4)
  leaf.plain(out, data, words, from ?? 0, to ?? data.length)
  if (leaf.physical === "BOOLEAN") packBooleans(out)
  return [...out.written()]
}

const le32 = (...values: Array<number>) => [...new Uint8Array(Int32Array.from(values).buffer)]
const le64 = (...values: Array<bigint>) => [...new Uint8Array(BigInt64Array.from(values).buffer)]
const utf8 = (text: string) => [...new TextEncoder().encode(text)]
const byteArray = (text: string) => [...le32(utf8(text).length), ...utf8(text)]

const failure = (type: LogicalType, values: ReadonlyArray<Value>): InvalidValue => {
  try {
    convert(type, values)
  } catch (error) {
    if (error instanceof InvalidValue) return error
    throw error
  }
  throw new Error("expected an InvalidValue")
}

/** The unscaled value of decimal text through the byte parser, as a bigint (or the parser's message). */
const decimalToUnscaled = (text: string, precision: number, scale: number): bigint => {
  const bytes = new TextEncoder().encode(text)
  const limbs = 8
  const words = new Uint32Array(limbs)
  const problem = parseDecimal(bytes, 0, bytes.length, precision, scale, words, 0, limbs)
  if (problem !== undefined) throw new Error(problem)
  let value = BigInt(words[limbs - 1]! | 0)
  for (let l = limbs - 2; l >= 0; l--) value = (value << 32n) | BigInt(words[l]!)
  return value
}

describe("parquet column conversion", () => {
  it("decimal text becomes the exact unscaled integer", () => {
    const cases: Array<[string, number, number, bigint]> = [
      ["-12.30", 5, 2, -1230n],
      ["-12.3", 5, 2, -1230n],
      ["12", 5, 2, 1200n],
      ["+12.", 5, 2, 1200n],
      [".5", 5, 2, 50n],
      ["-0.00", 5, 2, 0n],
      ["999.99", 5, 2, 99999n],
      ["1.2300", 5, 2, 123n],
      ["000123.45", 5, 2, 12345n],
      ["9007199254740993", 16, 0, 9007199254740993n],
      ["123456789012345.6", 18, 3, 123456789012345600n],
      ["-1234567890123456789012345678.0123456789", 38, 10, -12345678901234567890123456780123456789n],
      ["99999999999999999999999999999999999999", 38, 0, 10n ** 38n - 1n]
    ]
    for (const [text, precision, scale, unscaled] of cases) {
      expect(decimalToUnscaled(text, precision, scale), text).toBe(unscaled)
    }
  })

  it("decimal text that would lose digits or overflow is refused", () => {
    expect(() => decimalToUnscaled("1000.00", 5, 2)).toThrow("does not fit decimal(5,2)")
    expect(() => decimalToUnscaled("1.005", 5, 2)).toThrow("more than 2 fraction digits")
    expect(() => decimalToUnscaled(String(10n ** 38n), 38, 0)).toThrow("does not fit")
    for (const text of ["", "-", ".", "1e5", "NaN", "Infinity", "1.2.3", "1,5", " 1", "--1"]) {
      expect(() => decimalToUnscaled(text, 10, 2), JSON.stringify(text)).toThrow("expected decimal text")
    }
  })

  it("decimal text is parsed from its bytes at the edges of precision and sign", () => {
    const cases: Array<[string, number, number]> = [
      ["-99999999999999999999999999999999999999", 38, 0],
      ["99999999999999999999999999999999999999", 38, 0],
      ["-0.0000000001", 38, 10],
      [`-${"9".repeat(76)}`, 76, 0],
      ["-9223372036854775807", 19, 0],
      ["-999999999999999.999", 18, 3],
      ["-1", 1, 0]
    ]
    for (const [text, precision, scale] of cases) {
      const digits = text.replace("-", "").replace(".", "")
      const expected = BigInt(digits) * (text.startsWith("-") ? -1n : 1n)
      expect(decimalToUnscaled(text, precision, scale), text).toBe(expected)
    }
    const words = new Uint32Array(4)
    const bytes = new TextEncoder().encode("-1.5")
    expect(parseDecimal(bytes, 0, bytes.length, 9, 1, words, 0, 4)).toBeUndefined()
    const big = new Uint8Array(5)
    limbsToBigEndian(words, 0, big, 0, 5)
    expect([...big]).toEqual([0xff, 0xff, 0xff, 0xff, 0xf1])
  })

  it("uuids are written as their 16 bytes, NULLs skipped", () => {
    const expected = [0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00]
    expect(convert({ kind: "uuid" }, ["123e4567-e89b-12d3-a456-426614174000", null])).toEqual(expected)
  })

  it("writes only the requested rows; a decimal that does not parse names its row", () => {
    expect(convert({ kind: "int32" }, [1, 2, 3, 4], 1, 3)).toEqual(le32(2, 3))
    expect(convert({ kind: "int16" }, [-1, null, 32767])).toEqual(le32(-1, 32767))
    expect(convert({ kind: "int64" }, [1n, null, -(2n ** 63n)])).toEqual(le64(1n, -(2n ** 63n)))
    // Ten booleans, one NULL: nine bits, LSB first.
    expect(convert({ kind: "bool" }, [true, null, false, true, true, false, false, false, true, true])).toEqual([0b10001101, 0b1])
    const error = failure({ kind: "decimal", precision: 4, scale: 1 }, ["1.0", null, "x"])
    expect(error.row).toBe(2)
    expect(error.message).toContain("expected decimal text")
    const inList = failure({ kind: "list", element: { kind: "decimal", precision: 4, scale: 1 } }, [["1.0"], [], null, ["2.0", "1.25"]])
    expect(inList.row).toBe(3)
    expect(inList.message).toContain("more than 1 fraction digits")
  })

  it("decimals are written as INT32, INT64 or big-endian fixed bytes of their unscaled value", () => {
    expect(convert({ kind: "decimal", precision: 4, scale: 1 }, ["1.5", null, "-2.0"])).toEqual(le32(15, -20))
    expect(convert({ kind: "decimal", precision: 18, scale: 2 }, ["-0.01", "9999999999999999.99"])).toEqual(
      le64(-1n, 999999999999999999n)
    )
    // decimal(20,0) takes 9 bytes.
    expect(convert({ kind: "decimal", precision: 20, scale: 0 }, ["-1", "256"])).toEqual([
      ...Array<number>(9).fill(0xff),
      0, 0, 0, 0, 0, 0, 0, 1, 0
    ])
    expect(convert({ kind: "list", element: { kind: "decimal", precision: 4, scale: 1 } }, [["1.5", null], [], null])).toEqual(le32(15))
  })

  it("text, json and bytes are written straight from the batch's bytes, each after its 4-byte length", () => {
    expect(convert({ kind: "json" }, ['{"a":12345678901234567890,"é":1}'])).toEqual(byteArray('{"a":12345678901234567890,"é":1}'))
    const long = "x".repeat(40)
    expect(convert({ kind: "string" }, ["é", "", null, "abc", long])).toEqual([
      ...byteArray("é"),
      ...byteArray(""),
      ...byteArray("abc"),
      ...byteArray(long)
    ])
    expect(convert({ kind: "bytes" }, [Uint8Array.of(0, 255), null])).toEqual([2, 0, 0, 0, 0, 255])
  })

  it("a slice's size is read from the buffers' byte lengths", () => {
    expect(sliceByteLength(columnOf({ kind: "int64" }, [1n, 2n, 3n]), 0, 2)).toBe(16)
    expect(sliceByteLength(columnOf({ kind: "string" }, ["ab", "cde", "f"]), 1, 3)).toBe(2 * 4 + 4)
    expect(sliceByteLength(columnOf({ kind: "list", element: { kind: "int32" } }, [[1, 2], [3], []]), 0, 3)).toBe(3 * 4 + 3 * 4)
  })
})
