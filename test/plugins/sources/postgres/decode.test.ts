import { describe, expect, it } from "@effect/vitest"
import { parseArrayText } from "../../../../src/plugins/sources/postgres/array.js"
import {
  DecodeFailure,
  decodeBytea,
  decodeDate,
  decodeIntegralBigInt,
  decodeTime,
  decodeTimestamp,
  decodeTimestamptz,
  makeDecimalDecoder
} from "../../../../src/plugins/sources/postgres/decode.js"

describe("parseArrayText", () => {
  it("parses quoting, escapes and NULL", () => {
    expect(parseArrayText(String.raw`{"a,b","c\"d","e\\f",NULL,"NULL","","{x}"," sp ",plain}`)).toEqual([
      "a,b",
      'c"d',
      "e\\f",
      null,
      "NULL",
      "",
      "{x}",
      " sp ",
      "plain"
    ])
  })

  it("parses empty arrays, lower-bound prefixes and single elements", () => {
    expect(parseArrayText("{}")).toEqual([])
    expect(parseArrayText("[0:2]={1,2,3}")).toEqual(["1", "2", "3"])
    expect(parseArrayText("{NULL}")).toEqual([null])
    expect(parseArrayText(String.raw`{"\\x00ff"}`)).toEqual(["\\x00ff"])
  })

  it("rejects multi-dimensional and malformed arrays", () => {
    expect(() => parseArrayText("{{1,2},{3,4}}")).toThrow(/multi-dimensional/)
    expect(() => parseArrayText("[1:2][1:2]={{1,2},{3,4}}")).toThrow(/multi-dimensional/)
    expect(() => parseArrayText('{"abc')).toThrow(DecodeFailure)
    expect(() => parseArrayText("{1,2")).toThrow(DecodeFailure)
    expect(() => parseArrayText("{1}x")).toThrow(DecodeFailure)
    expect(() => parseArrayText("1,2")).toThrow(DecodeFailure)
  })
})

describe("dates and times", () => {
  it("decodes dates to days since the epoch, BC included", () => {
    expect(decodeDate("1970-01-01")).toBe(0)
    expect(decodeDate("1969-12-31")).toBe(-1)
    expect(decodeDate("2024-02-29")).toBe(19782)
    expect(decodeDate("5874897-12-31")).toBe(2145042905)
    expect(decodeDate("0044-03-15 BC")).toBe(-735160)
    expect(() => decodeDate("infinity")).toThrow(/infinity/)
    expect(() => decodeDate("-infinity")).toThrow(/infinity/)
  })

  it("decodes time of day to microseconds", () => {
    expect(decodeTime("00:00:00")).toBe(0n)
    expect(decodeTime("23:59:59.999999")).toBe(86_399_999_999n)
    expect(decodeTime("12:00:00.5")).toBe(43_200_500_000n)
    expect(decodeTime("24:00:00")).toBe(86_400_000_000n)
  })

  it("decodes timestamps without going through Date", () => {
    expect(decodeTimestamp("1970-01-01 00:00:00.000001")).toBe(1n)
    expect(decodeTimestamp("1969-12-31 23:59:59.999999")).toBe(-1n)
    expect(decodeTimestamp("1969-12-31 23:59:59.5")).toBe(-500_000n)
    expect(decodeTimestamp("0001-01-01 00:00:00 BC")).toBe(-62_167_219_200_000_000n)
    expect(decodeTimestamp("200000-01-01 00:00:00.000001")).toBe(6_249_223_180_800_000_001n)
    expect(() => decodeTimestamp("294276-12-31 23:59:59.999999")).toThrow(/64-bit/)
    expect(() => decodeTimestamp("infinity")).toThrow(DecodeFailure)
  })

  it("decodes timestamptz with any offset", () => {
    expect(decodeTimestamptz("2024-01-24 03:33:20.123456+00")).toBe(1_706_067_200_123_456n)
    expect(decodeTimestamptz("2020-01-01 10:00:00+05:30")).toBe(1_577_853_000_000_000n)
    expect(decodeTimestamptz("2020-01-01 00:00:00-00:00:30")).toBe(1_577_836_830_000_000n)
    expect(decodeTimestamptz("4713-01-01 00:00:00+00 BC")).toBe(-210_863_520_000_000_000n)
  })
})

describe("decimals", () => {
  it("keeps exact text with exactly `scale` fractional digits", () => {
    const d = makeDecimalDecoder(12, 2)
    expect(d("12.30")).toBe("12.30")
    expect(d("5")).toBe("5.00")
    expect(d("-0.5")).toBe("-0.50")
    expect(d("7.1000")).toBe("7.10")
    expect(d("9999999999.99")).toBe("9999999999.99")
    expect(makeDecimalDecoder(5, 0)("-0.00")).toBe("0")
    expect(makeDecimalDecoder(5, 0)("42.000")).toBe("42")
  })

  it("never rounds and never overflows silently", () => {
    const d = makeDecimalDecoder(12, 2)
    expect(() => d("1.234")).toThrow(/fractional digits/)
    expect(() => d("10000000000")).toThrow(/does not fit decimal\(12,2\)/)
    expect(() => d("NaN")).toThrow(/no decimal representation/)
    expect(() => d("Infinity")).toThrow(/no decimal representation/)
    expect(() => d("-Infinity")).toThrow(/no decimal representation/)
  })

  it("turns integral numerics into int64", () => {
    expect(decodeIntegralBigInt("12.00")).toBe(12n)
    expect(decodeIntegralBigInt("-9223372036854775808")).toBe(-9_223_372_036_854_775_808n)
    expect(() => decodeIntegralBigInt("9223372036854775808")).toThrow(/int64/)
    expect(() => decodeIntegralBigInt("1.5")).toThrow(DecodeFailure)
  })
})

describe("bytea", () => {
  it("decodes hex into a fresh Uint8Array", () => {
    const bytes = decodeBytea("\\x00ff10")
    expect(bytes).toBeInstanceOf(Uint8Array)
    expect([...(bytes as Uint8Array)]).toEqual([0, 255, 16])
    expect((bytes as Uint8Array).buffer.byteLength).toBe(3)
    expect([...(decodeBytea("\\x") as Uint8Array)]).toEqual([])
  })
})
