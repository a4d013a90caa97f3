import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { copyBytes, type CsvFix, makeRowFixer } from "../../../../src/plugins/sources/postgres/csv-native-fix.js"

/**
 * The client-side rewrite of PostgreSQL's native text into Rivet's CSV spelling, byte by byte. Each row is placed
 * inside a larger buffer between CopyData framing bytes, as the socket delivers it, so a read past the message's end
 * (into the next message, which starts with a comma-free header) would show.
 */

const fixRow = (fixes: ReadonlyArray<CsvFix>, row: string): string => {
  const fixer = makeRowFixer(fixes)!
  const message = Buffer.from(row, "utf8")
  const source = Buffer.concat([Buffer.from("d\u0000\u0000\u0000,,"), message, Buffer.from(",\"d\u0000,\n")])
  const start = 6
  const target = Buffer.alloc(3 + message.length + fixer.maxGrowth + 3, 0x7e)
  const end = fixer.write(source, start, start + message.length, target, 3)
  expect(end - 3 - message.length).toBeLessThanOrEqual(fixer.maxGrowth)
  // Nothing written outside the row's room.
  expect(target.subarray(0, 3).toString()).toBe("~~~")
  expect(target.subarray(end).every((byte) => byte === 0x7e)).toBe(true)
  return target.subarray(3, end).toString("utf8")
}

const tz: ReadonlyArray<CsvFix> = ["none", "timestamptz"]

describe("csv-native-fix: timestamps", () => {
  it("timestamptz: T between date and time, the fraction padded to microseconds, +00 as Z", () => {
    expect(fixRow(tz, "1,2024-01-31 12:34:56+00\n")).toBe("1,2024-01-31T12:34:56.000000Z\n")
    expect(fixRow(tz, "1,2024-01-31 12:34:56.5+00\n")).toBe("1,2024-01-31T12:34:56.500000Z\n")
    expect(fixRow(tz, "1,2024-01-31 12:34:56.12345+00\n")).toBe("1,2024-01-31T12:34:56.123450Z\n")
    expect(fixRow(tz, "1,2024-01-31 12:34:56.123456+00\n")).toBe("1,2024-01-31T12:34:56.123456Z\n")
    expect(fixRow(tz, "1,0001-01-01 00:00:00+00\n")).toBe("1,0001-01-01T00:00:00.000000Z\n")
    expect(fixRow(tz, "1,9999-12-31 23:59:59.999999+00\n")).toBe("1,9999-12-31T23:59:59.999999Z\n")
  })

  it("timestamp: the same without a zone", () => {
    const fixes: ReadonlyArray<CsvFix> = ["timestamp", "none"]
    expect(fixRow(fixes, "2021-06-01 12:00:17,x\n")).toBe("2021-06-01T12:00:17.000000,x\n")
    expect(fixRow(fixes, "1969-12-31 23:59:59.999999,x\n")).toBe("1969-12-31T23:59:59.999999,x\n")
    expect(fixRow(fixes, "1969-12-31 23:59:59.1,\n")).toBe("1969-12-31T23:59:59.100000,\n")
  })

  it("keeps what the server's expression already wrote (years outside 1–9999) and NULLs", () => {
    for (const text of ["+10000-01-01T00:00:00.000000Z", "-0043-03-15T12:00:00.000000Z", "0000-01-01T00:00:00.000000Z", "+294247-01-10T04:00:54.775807Z"]) {
      expect(fixRow(tz, `7,${text}\n`)).toBe(`7,${text}\n`)
    }
    expect(fixRow(tz, "7,\n")).toBe("7,\n")
    expect(fixRow(["timestamp", "timestamptz", "none"], ",,\n")).toBe(",,\n")
  })

  it("refuses text it does not recognise rather than writing wrong bytes", () => {
    expect(() => fixRow(tz, "1,2024-01-31 12:34:56+01\n")).toThrow(/unexpected timestamptz text/)
    expect(() => fixRow(tz, "1,2024-01-31 12:34:56.5+05:30\n")).toThrow(/unexpected timestamptz text/)
    expect(() => fixRow(["timestamp"], "2024-01-31 12:34:56 BC\n")).toThrow(/unexpected timestamp text/)
    expect(() => fixRow(tz, '1,"2024-01-31 12:34:56+00"\n')).toThrow(/unexpected quoted text/)
    expect(() => fixRow(["time"], "12:34\n")).toThrow(/unexpected time text/)
  })
})

describe("csv-native-fix: times of day", () => {
  it("pads the fraction to microseconds", () => {
    const fixes: ReadonlyArray<CsvFix> = ["none", "time", "none"]
    expect(fixRow(fixes, "1,00:00:00,2\n")).toBe("1,00:00:00.000000,2\n")
    expect(fixRow(fixes, "1,24:00:00,2\n")).toBe("1,24:00:00.000000,2\n")
    expect(fixRow(fixes, "1,00:00:00.5,2\n")).toBe("1,00:00:00.500000,2\n")
    expect(fixRow(fixes, "1,23:59:59.999999,2\n")).toBe("1,23:59:59.999999,2\n")
    expect(fixRow(fixes, "1,,2\n")).toBe("1,,2\n")
  })
})

describe("csv-native-fix: other fields around the fixed ones", () => {
  it("copies quoted fields — commas, doubled quotes, line breaks, empty strings — byte for byte", () => {
    const fixes: ReadonlyArray<CsvFix> = ["none", "none", "timestamptz", "none", "time"]
    const quoted = '"a, ""b""\nc\r\n"'
    expect(fixRow(fixes, `${quoted},"",2020-01-01 00:00:01.000001+00,"x,y",01:02:03\n`)).toBe(
      `${quoted},"",2020-01-01T00:00:01.000001Z,"x,y",01:02:03.000000\n`
    )
    expect(fixRow(fixes, `"""",é 日本 🎉,2020-01-01 00:00:01+00,"""x""",01:02:03.25\n`)).toBe(
      `"""",é 日本 🎉,2020-01-01T00:00:01.000000Z,"""x""",01:02:03.250000\n`
    )
  })

  it("copies the rest of the row after the last fixed column, short or long", () => {
    const long = `"${"x,".repeat(100)}"`
    expect(fixRow(["timestamptz", "none"], `2020-01-01 00:00:01+00,${long}\n`)).toBe(`2020-01-01T00:00:01.000000Z,${long}\n`)
    expect(fixRow(["timestamptz", "none", "none"], "2020-01-01 00:00:01+00,a,\n")).toBe("2020-01-01T00:00:01.000000Z,a,\n")
  })

  it("has no fixer when no column needs one; copyBytes copies short and long ranges", () => {
    expect(makeRowFixer(["none", "none"])).toBeUndefined()
    expect(makeRowFixer([])).toBeUndefined()
    for (const length of [0, 1, 63, 64, 65, 300]) {
      const source = Buffer.from(Array.from({ length: length + 4 }, (_, i) => i % 251))
      const target = Buffer.alloc(length + 2)
      expect(copyBytes(source, 2, 2 + length, target, 1)).toBe(1 + length)
      expect(target.subarray(1, 1 + length).equals(source.subarray(2, 2 + length))).toBe(true)
      expect([target[0], target[length + 1]]).toEqual([0, 0])
    }
  })
})

/** PostgreSQL's float8 text with extra_float_digits ≥ 1: the shortest digits, exponent notation outside [1e-4, 1e15). */
const postgresText = (value: number, fixedBelow: number): string => {
  if (!Number.isFinite(value) || value === 0) return Object.is(value, -0) ? "-0" : `${value}`
  const [mantissa, exponent] = value.toExponential().split("e") as [string, string]
  const e = Number(exponent)
  const magnitude = Math.abs(value)
  if (magnitude >= 1e-4 && magnitude < fixedBelow) return `${value}`
  return `${mantissa}e${e < 0 ? "-" : "+"}${String(Math.abs(e)).padStart(2, "0")}`
}

describe("csv-native-fix: floats", () => {
  const float = (text: string) => fixRow(["float", "none"], `${text},x\n`).slice(0, -3)

  it("rewrites exponent notation into JavaScript's spelling and keeps everything else", () => {
    expect(float("1e-05")).toBe("0.00001")
    expect(float("-1.5e-06")).toBe("-0.0000015")
    expect(float("1e-07")).toBe("1e-7")
    expect(float("1.7976931348623157e+308")).toBe("1.7976931348623157e+308")
    expect(float("1e+15")).toBe("1000000000000000")
    expect(float("1.5e+20")).toBe("150000000000000000000")
    expect(float("-1e+20")).toBe("-100000000000000000000")
    expect(float("1e+21")).toBe("1e+21")
    expect(float("1.2345678901234567e+16")).toBe("12345678901234567")
    expect(float("1.25e+02")).toBe("125")
    expect(float("1.2345e+02")).toBe("123.45")
    for (const kept of ["0.1", "-0", "0", "NaN", "Infinity", "-Infinity", "123456.7", ""]) expect(float(kept)).toBe(kept)
  })

  it("gives String(x) (and -0) for any double written as PostgreSQL writes float8 and float4 ranges", () => {
    const double = fc.double({ noNaN: true })
    const scaled = fc.tuple(fc.double({ min: 1, max: 10, noNaN: true }), fc.integer({ min: -330, max: 310 })).map(([m, e]) => m * 10 ** e)
    fc.assert(
      fc.property(fc.oneof(double, scaled), fc.constantFrom(1e15, 1e6), (value, fixedBelow) => {
        expect(float(postgresText(value, fixedBelow))).toBe(Object.is(value, -0) ? "-0" : `${value}`)
      }),
      { numRuns: 3000 }
    )
  })
})
