import { describe, expect, it } from "@effect/vitest"
import { appendColumn, decimalToUnscaled, InvalidValue } from "../../../src/formats/parquet/columns.js"
import type { LogicalType, Value } from "../../../src/runtime/batch.js"

const convert = (type: LogicalType, values: ReadonlyArray<Value>, from = 0, to = values.length) => {
  const out: Array<unknown> = []
  appendColumn(type)(values, from, to, out)
  return out
}

const failure = (type: LogicalType, values: ReadonlyArray<Value>): InvalidValue => {
  try {
    convert(type, values)
  } catch (error) {
    if (error instanceof InvalidValue) return error
    throw error
  }
  throw new Error("expected an InvalidValue")
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

  it("uuids become 16 bytes, with or without hyphens, either case", () => {
    const [a, b, c] = convert({ kind: "uuid" }, [
      "123e4567-e89b-12d3-a456-426614174000",
      "123E4567E89B12D3A456426614174000",
      null
    ])
    const expected = Uint8Array.from([0x12, 0x3e, 0x45, 0x67, 0xe8, 0x9b, 0x12, 0xd3, 0xa4, 0x56, 0x42, 0x66, 0x14, 0x17, 0x40, 0x00])
    expect(a).toEqual(expected)
    expect(b).toEqual(expected)
    expect(c).toBeNull()
    for (const bad of ["123e4567-e89b-12d3-a456-42661417400", "123e4567+e89b-12d3-a456-426614174000", "g23e4567-e89b-12d3-a456-426614174000", "123e4567-e89b-12d3-a456-42661417400é"]) {
      expect(failure({ kind: "uuid" }, [bad]).message).toContain("expected a UUID")
    }
  })

  it("converts only the requested rows and reports the failing row", () => {
    expect(convert({ kind: "int32" }, [1, 2, 3, 4], 1, 3)).toEqual([2, 3])
    const error = failure({ kind: "int64" }, [1n, null, 3])
    expect(error.row).toBe(2)
    expect(error.message).toContain("expected a bigint, got number 3")
  })

  it("json goes in as its exact UTF-8 text, lists keep their NULL elements", () => {
    const [json] = convert({ kind: "json" }, ['{"a":12345678901234567890,"é":1}'])
    expect(new TextDecoder().decode(json as Uint8Array)).toBe('{"a":12345678901234567890,"é":1}')
    expect(convert({ kind: "list", element: { kind: "decimal", precision: 4, scale: 1 } }, [["1.5", null], [], null])).toEqual([
      [15n, null],
      [],
      null
    ])
  })

  it("values of the wrong kind are refused per type", () => {
    const cases: Array<[LogicalType, Value]> = [
      [{ kind: "int16" }, 32768],
      [{ kind: "int32" }, 1.5],
      [{ kind: "date" }, 2 ** 31],
      [{ kind: "float64" }, "1"],
      [{ kind: "bool" }, 1],
      [{ kind: "string" }, 5],
      [{ kind: "bytes" }, "x"],
      [{ kind: "timestamptz" }, 5],
      [{ kind: "list", element: { kind: "int32" } }, 5]
    ]
    for (const [type, value] of cases) {
      expect(() => convert(type, [value]), type.kind).toThrow(InvalidValue)
    }
  })
})
