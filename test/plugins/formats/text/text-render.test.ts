import { describe, expect, it } from "@effect/vitest"
import { csvField, type FieldFactory, jsonField } from "../../../../src/plugins/formats/text/fields.js"
import { float32Text, float64Text } from "../../../../src/plugins/formats/text/numbers.js"
import { ByteOut, viewed } from "../../../../src/plugins/formats/text/out.js"
import { type LogicalType, makeBatch, type Value } from "../../../../src/core/batch.js"
import { renderDate, renderTime, renderTimestamp, renderTimestamptz } from "../../../../src/core/temporal-text.js"
import { shortestFloat32 } from "../roundtrip-arbitraries.js"

/** The bytes a field renderer writes for one value, as text. */
const rendered = (factory: (type: LogicalType) => FieldFactory | undefined, type: LogicalType) => (value: Value) => {
  const batch = makeBatch({ columns: [{ name: "v", type }] }, [[value]])
  const out = new ByteOut(1)
  factory(type)!(batch.columns[0]!)(out, 0)
  return Buffer.concat(out.take()).toString("utf8")
}
const text = (type: LogicalType) => rendered(csvField, type)
const json = (type: LogicalType) => rendered(jsonField, type)

/** What the byte renderers write for dates and timestamps, compared with the runtime's string renderers. */
const bytesDate = (days: number) => text({ kind: "date" })(days)
const bytesTimestamp = (micros: bigint) => text({ kind: "timestamp" })(micros)

const DAY_MS = 86_400_000

/** Deterministic PRNG (mulberry32) so a failure can be reproduced. */
const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296
}

// 0000-01-01T00:00:00Z and 9999-12-31T23:59:59.999Z: the years Date#toISOString writes with four digits.
const MIN_MS = -62_167_219_200_000
const MAX_MS = 253_402_300_799_999

const isoMicros = (ms: number, extraMicros: number) =>
  `${new Date(ms).toISOString().slice(0, 23)}${String(extraMicros).padStart(3, "0")}`

describe("renderDate", () => {
  it("matches Date#toISOString for random days in years 0000–9999", () => {
    const next = random(1)
    for (let i = 0; i < 20_000; i++) {
      const days = Math.floor(MIN_MS / DAY_MS + next() * ((MAX_MS - MIN_MS) / DAY_MS))
      expect(renderDate(days)).toBe(new Date(days * DAY_MS).toISOString().slice(0, 10))
      if (i % 10 === 0) expect(bytesDate(days)).toBe(renderDate(days))
    }
  })

  it("matches every day around the epoch and leap days", () => {
    for (let days = -800; days <= 800; days++) {
      expect(renderDate(days)).toBe(new Date(days * DAY_MS).toISOString().slice(0, 10))
      expect(bytesDate(days)).toBe(renderDate(days))
    }
    expect(renderDate(11_016)).toBe("2000-02-29")
    expect(renderDate(-25_508)).toBe("1900-03-01")
  })

  it("writes years outside 0000–9999 in ISO 8601 expanded form", () => {
    expect(renderDate(-719_528)).toBe("0000-01-01")
    expect(renderDate(-719_529)).toBe("-0001-12-31")
    expect(renderDate(-719_162)).toBe("0001-01-01")
    expect(renderDate(2_932_896)).toBe("9999-12-31")
    expect(renderDate(2_932_897)).toBe("+10000-01-01")
    expect(renderDate(-4_000_000)).toBe(`-${new Date(-4_000_000 * DAY_MS).toISOString().slice(3, 13)}`)
    for (const days of [-719_528, -719_529, -719_162, 2_932_896, 2_932_897, -4_000_000, 2 ** 31 - 1, -(2 ** 31)])
      expect(bytesDate(days)).toBe(renderDate(days))
  })
})

describe("renderTimestamp", () => {
  it("matches Date#toISOString plus microsecond digits for random instants", () => {
    const next = random(2)
    for (let i = 0; i < 50_000; i++) {
      const ms = Math.floor(MIN_MS + next() * (MAX_MS - MIN_MS))
      const extra = Math.floor(next() * 1000)
      const micros = BigInt(ms) * 1000n + BigInt(extra)
      expect(renderTimestamp(micros)).toBe(isoMicros(ms, extra))
      if (i % 10 === 0) expect(bytesTimestamp(micros)).toBe(renderTimestamp(micros))
    }
  })

  it("handles instants just before and after midnight, before 1970 and at the edges", () => {
    expect(renderTimestamp(0n)).toBe("1970-01-01T00:00:00.000000")
    expect(renderTimestamp(-1n)).toBe("1969-12-31T23:59:59.999999")
    expect(renderTimestamp(86_399_999_999n)).toBe("1970-01-01T23:59:59.999999")
    expect(renderTimestamp(86_400_000_000n)).toBe("1970-01-02T00:00:00.000000")
    expect(renderTimestamp(-86_400_000_000n)).toBe("1969-12-31T00:00:00.000000")
    expect(renderTimestamp(-86_400_000_001n)).toBe("1969-12-30T23:59:59.999999")
    expect(renderTimestamp(-2_208_988_800_000_001n)).toBe("1899-12-31T23:59:59.999999")
    expect(renderTimestamp(-62_135_596_800_000_000n)).toBe("0001-01-01T00:00:00.000000")
    expect(renderTimestamp(253_402_300_799_999_999n)).toBe("9999-12-31T23:59:59.999999")
    expect(renderTimestamp(253_402_300_800_000_000n)).toBe("+10000-01-01T00:00:00.000000")
    expect(renderTimestamp(-62_167_219_200_000_001n)).toBe("-0001-12-31T23:59:59.999999")
    for (const micros of [0n, -1n, 86_400_000_000n, -86_400_000_001n, -62_167_219_200_000_001n, 253_402_300_800_000_000n,
      -(2n ** 63n), 2n ** 63n - 1n])
      expect(bytesTimestamp(micros)).toBe(renderTimestamp(micros))
  })

  it("is exact on both sides of 2^53 µs, where the fast path hands over to bigint arithmetic", () => {
    const limit = 2n ** 53n
    for (const micros of [limit - 2n, limit - 1n, limit, limit + 1n, -limit + 1n, -limit, -limit - 1n]) {
      const ms = micros >= 0n ? micros / 1000n : (micros - 999n) / 1000n
      const extra = Number(micros - ms * 1000n)
      expect(renderTimestamp(micros)).toBe(isoMicros(Number(ms), extra))
      expect(bytesTimestamp(micros)).toBe(renderTimestamp(micros))
    }
  })

  it("renders several instants of the same day and alternating days correctly (date cache)", () => {
    const day = 1_706_054_400_000_000n
    expect(renderTimestamp(day + 1n)).toBe("2024-01-24T00:00:00.000001")
    expect(renderTimestamp(day + 3_600_000_000n)).toBe("2024-01-24T01:00:00.000000")
    expect(renderTimestamp(-day)).toBe("1915-12-10T00:00:00.000000")
    expect(renderTimestamp(day + 12_200_123_456n)).toBe("2024-01-24T03:23:20.123456")
  })

  it("adds Z for timestamptz", () => {
    expect(renderTimestamptz(1_706_067_200_123_456n)).toBe("2024-01-24T03:33:20.123456Z")
    expect(text({ kind: "timestamptz" })(1_706_067_200_123_456n)).toBe("2024-01-24T03:33:20.123456Z")
  })
})

describe("renderTime", () => {
  it("writes HH:MM:SS.ffffff", () => {
    expect(renderTime(0n)).toBe("00:00:00.000000")
    expect(renderTime(45_296_789_012n)).toBe("12:34:56.789012")
    expect(renderTime(86_399_999_999n)).toBe("23:59:59.999999")
    expect(renderTime(86_400_000_000n)).toBe("24:00:00.000000")
    expect(renderTime(1n)).toBe("00:00:00.000001")
    for (const micros of [0n, 45_296_789_012n, 86_400_000_000n, 1n, -1n, 360_000_000_000n])
      expect(text({ kind: "time" })(micros)).toBe(renderTime(micros))
  })
})

describe("float text", () => {
  it("float64: writes the shortest round-trip text and keeps the special values apart", () => {
    const renderFloat = float64Text
    expect(renderFloat(0.1)).toBe("0.1")
    expect(renderFloat(0)).toBe("0")
    expect(renderFloat(-0)).toBe("-0")
    expect(renderFloat(Number.NaN)).toBe("NaN")
    expect(renderFloat(Infinity)).toBe("Infinity")
    expect(renderFloat(-Infinity)).toBe("-Infinity")
    expect(renderFloat(1e21)).toBe("1e+21")
    expect(renderFloat(5e-324)).toBe("5e-324")
    expect(renderFloat(-1.5)).toBe("-1.5")
    const next = random(3)
    for (let i = 0; i < 1000; i++) {
      const n = (next() - 0.5) * 10 ** Math.floor(next() * 40 - 20)
      expect(Number(renderFloat(n))).toBe(n)
    }
  })

  it("float32: writes the shortest decimal that reads back to the float4", () => {
    expect(float32Text(Math.fround(0.1))).toBe("0.1")
    expect(float32Text(Math.fround(1 / 3))).toBe("0.33333334")
    expect(float32Text(Math.fround(3.4028235e38))).toBe("3.4028235e+38")
    expect(float32Text(Math.fround(1e-45))).toBe("1e-45")
    expect(float32Text(Math.fround(1e-7))).toBe("1e-7")
    expect(float32Text(16777216)).toBe("16777216")
    expect(float32Text(Math.fround(123456789))).toBe("123456790")
    // 68995700 reads back to this float4 but lies exactly halfway to the next one: PostgreSQL writes 68995696.
    expect(float32Text(68995696)).toBe("68995696")
    // Exactly halfway between two 8-digit decimals: the even one, as shortest round-trip output does.
    expect(float32Text(3823031.25)).toBe("3823031.2")
    expect(float32Text(3823031.75)).toBe("3823031.8")
    // A power of two: the nearest 8-digit decimal (1.2621774e-29) misses its narrower lower interval.
    expect(float32Text(2 ** -96)).toBe("1.2621775e-29")
    expect(float32Text(-0)).toBe("-0")
    expect(float32Text(Number.NaN)).toBe("NaN")
    expect(text({ kind: "float32" })(0.1)).toBe("0.1")
    expect(json({ kind: "float32" })(-Infinity)).toBe('"-Infinity"')
    const bits = new Uint32Array(1)
    const floats = new Float32Array(bits.buffer)
    const next = random(4)
    for (let i = 0; i < 20_000; i++) {
      bits[0] = Math.floor(next() * 2 ** 32)
      const f = floats[0]!
      expect(float32Text(f)).toBe(float64Text(shortestFloat32(f)))
    }
  })
})

describe("bytes", () => {
  it("writes lowercase hex; the empty value is quoted in CSV", () => {
    expect(text({ kind: "bytes" })(new Uint8Array([0, 15, 255, 16, 171]))).toBe("000fff10ab")
    expect(text({ kind: "bytes" })(new Uint8Array([1, 2, 3, 4]).subarray(1, 3))).toBe("0203")
    expect(text({ kind: "bytes" })(new Uint8Array())).toBe('""')
    expect(json({ kind: "bytes" })(new Uint8Array(100).fill(0xab))).toBe(`"${"ab".repeat(100)}"`)
  })
})

describe("json values in JSON", () => {
  it("keeps JSON text as is but turns line breaks into spaces", () => {
    const renderJsonText = json({ kind: "json" })
    expect(renderJsonText('{"a": [1, 2]}')).toBe('{"a": [1, 2]}')
    const pretty = '{\r\n  "a": "x\\ny",\n  "b": 12345678901234567890\n}'
    const flat = renderJsonText(pretty)
    expect(flat).not.toMatch(/[\r\n]/)
    expect(JSON.parse(flat)).toEqual(JSON.parse(pretty))
    expect(flat).toContain("12345678901234567890")
  })
})

describe("CSV fields", () => {
  it("renders every logical type", () => {
    expect(text({ kind: "int16" })(-12)).toBe("-12")
    expect(text({ kind: "int32" })(2_147_483_647)).toBe("2147483647")
    expect(text({ kind: "int64" })(-9_223_372_036_854_775_808n)).toBe("-9223372036854775808")
    expect(text({ kind: "float32" })(1.5)).toBe("1.5")
    expect(text({ kind: "float64" })(Number.NaN)).toBe("NaN")
    expect(text({ kind: "decimal", precision: 12, scale: 2 })("-12.30")).toBe("-12.30")
    expect(text({ kind: "string" })("a,b")).toBe('"a,b"')
    expect(text({ kind: "string" })("")).toBe('""')
    expect(text({ kind: "string" })(" é 日本 ")).toBe(" é 日本 ")
    expect(text({ kind: "string" })('say "hi"')).toBe('"say ""hi"""')
    expect(text({ kind: "string" })("x".repeat(100) + '"')).toBe(`"${"x".repeat(100)}"""`)
    expect(text({ kind: "string" })("x".repeat(100) + "\n")).toBe(`"${"x".repeat(100)}\n"`)
    expect(text({ kind: "bool" })(true)).toBe("true")
    expect(text({ kind: "bool" })(false)).toBe("false")
    expect(text({ kind: "date" })(19_746)).toBe("2024-01-24")
    expect(text({ kind: "time" })(1n)).toBe("00:00:00.000001")
    expect(text({ kind: "timestamp" })(0n)).toBe("1970-01-01T00:00:00.000000")
    expect(text({ kind: "timestamptz" })(0n)).toBe("1970-01-01T00:00:00.000000Z")
    expect(text({ kind: "uuid" })("0e3b2a1c-8d6f-4c2e-9b1a-5f7d3c9e2b10")).toBe("0e3b2a1c-8d6f-4c2e-9b1a-5f7d3c9e2b10")
    expect(text({ kind: "json" })('{"a":\n1}')).toBe('"{""a"":\n1}"')
    expect(text({ kind: "bytes" })(new Uint8Array([222, 173]))).toBe("dead")
    expect(text({ kind: "interval" })("P1Y2M3DT4H5M6.5S")).toBe("P1Y2M3DT4H5M6.5S")
  })

  it("renders lists as JSON arrays, quoted as needed", () => {
    expect(text({ kind: "list", element: { kind: "int32" } })([1, null, 3])).toBe('"[1,null,3]"')
    expect(text({ kind: "list", element: { kind: "string" } })(["a", 'b"c'])).toBe('"[""a"",""b\\""c""]"')
    expect(text({ kind: "list", element: { kind: "int64" } })([1n, null])).toBe('"[""1"",null]"')
    expect(text({ kind: "list", element: { kind: "int32" } })([])).toBe("[]")
    expect(text({ kind: "list", element: { kind: "int32" } })([7])).toBe("[7]")
  })

  it("knows no type outside the contract", () => {
    expect(csvField({ kind: "decimal256" } as unknown as LogicalType)).toBeUndefined()
    expect(jsonField({ kind: "list", element: { kind: "money" } } as unknown as LogicalType)).toBeUndefined()
  })
})

describe("JSON values", () => {
  it("renders numbers, exact strings and nested JSON", () => {
    expect(json({ kind: "int32" })(7)).toBe("7")
    expect(json({ kind: "int64" })(9_007_199_254_740_993n)).toBe('"9007199254740993"')
    expect(json({ kind: "decimal", precision: 38, scale: 2 })("123456789012345678901234567890.12")).toBe(
      '"123456789012345678901234567890.12"'
    )
    expect(json({ kind: "float64" })(-0)).toBe("-0")
    expect(json({ kind: "float64" })(Number.NaN)).toBe('"NaN"')
    expect(json({ kind: "float64" })(Infinity)).toBe('"Infinity"')
    expect(json({ kind: "float64" })(-Infinity)).toBe('"-Infinity"')
    expect(json({ kind: "string" })('a"b\n\u2028é')).toBe(JSON.stringify('a"b\n\u2028é'))
    const controls = Array.from({ length: 32 }, (_, i) => String.fromCharCode(i)).join("") + '\\"\u007f\u2029🎉'
    expect(json({ kind: "string" })(controls)).toBe(JSON.stringify(controls))
    // A lone surrogate cannot be stored as UTF-8: makeBatch turns it into U+FFFD.
    expect(json({ kind: "string" })("a\ud800b")).toBe(JSON.stringify("a\ufffdb"))
    expect(json({ kind: "json" })('{"k":[1,2]}')).toBe('{"k":[1,2]}')
    expect(json({ kind: "bytes" })(new Uint8Array([1]))).toBe('"01"')
    expect(json({ kind: "date" })(0)).toBe('"1970-01-01"')
    expect(json({ kind: "timestamptz" })(-1n)).toBe('"1969-12-31T23:59:59.999999Z"')
    expect(json({ kind: "bool" })(false)).toBe("false")
  })

  it("renders nested lists and lists of JSON values", () => {
    const nested = json({ kind: "list", element: { kind: "list", element: { kind: "float64" } } })
    expect(nested([[1.5, Number.NaN], null, []])).toBe('[[1.5,"NaN"],null,[]]')
    const docs = json({ kind: "list", element: { kind: "json" } })
    expect(JSON.parse(docs(['{"a":1}', "null", "[2,\n3]"]))).toEqual([{ a: 1 }, null, [2, 3]])
  })
})

describe("ByteOut.copyViewed", () => {
  it("copies any range of a view into the output, across growth, four bytes at a time or not", () => {
    const source = Uint8Array.from({ length: 300 }, (_, i) => (i * 37 + 11) & 0xff)
    // A view into a larger buffer, at an odd offset: the DataView must cover exactly these bytes.
    const backing = new Uint8Array(source.length + 7)
    backing.set(source, 3)
    const bytes = viewed(backing.subarray(3, 3 + source.length))
    const out = new ByteOut(1)
    const expected: Array<number> = []
    const next = random(5)
    for (let i = 0; i < 2000; i++) {
      const start = Math.floor(next() * source.length)
      const end = Math.min(source.length, start + Math.floor(next() * (i % 3 === 0 ? 100 : 12)))
      out.copyViewed(bytes, start, end)
      expected.push(...source.subarray(start, end))
    }
    expect(Buffer.concat(out.take()).equals(Buffer.from(expected))).toBe(true)
  })
})

describe("ByteOut.take", () => {
  it("copies out output that fills little of its buffer and keeps the buffer; larger output is handed over whole", () => {
    const out = new ByteOut()
    out.ascii("a,b\n")
    const small = out.take()[0]!
    expect(Buffer.from(small).toString()).toBe("a,b\n")
    // A copy of exactly its bytes: it pins no buffer, and the next write cannot change it.
    expect(small.buffer.byteLength).toBe(4)
    const kept = out.buf
    out.ascii("c,d\n")
    expect(out.buf).toBe(kept)
    expect(Buffer.from(small).toString()).toBe("a,b\n")
    expect(Buffer.concat(out.take()).toString()).toBe("c,d\n")
    out.ascii("x".repeat(kept.length))
    const large = out.take()[0]!
    expect(large.length).toBe(kept.length)
    // The next buffer is allocated only once something is written: a part that ends here never needs it.
    expect(out.buf.length).toBe(0)
    out.byte(0x79)
    expect(out.buf.length).toBeGreaterThanOrEqual(kept.length)
    expect(large.buffer).not.toBe(out.buf.buffer)
    expect(Buffer.concat(out.take()).toString()).toBe("y")
    expect(Buffer.from(large).toString()).toBe("x".repeat(kept.length))
  })

  it("buffers are never slices of Node's shared pool: the encoder thread transfers them", () => {
    const out = new ByteOut()
    out.ascii("z".repeat(100))
    expect(out.buf.byteOffset).toBe(0)
    expect(out.buf.buffer.byteLength).toBe(out.buf.length)
  })
})
