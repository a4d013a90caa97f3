import * as fc from "fast-check"
import { type BatchSchema, type Column, type LogicalType, makeBatch, type Batch, type Value } from "../../../src/core/batch.js"

/**
 * fast-check arbitraries for batches of every logical type, in the value representations `src/core/batch.ts`
 * defines (what a source hands to a format), weighted towards the values that break encoders.
 */

const INT64_MIN = -(2n ** 63n)
const INT64_MAX = 2n ** 63n - 1n
const INT32_MIN = -(2 ** 31)
const INT32_MAX = 2 ** 31 - 1
const MICROS_PER_DAY = 86_400_000_000n

/** Edge values first, then the whole range. */
const edgesOr = <T>(edges: ReadonlyArray<T>, any: fc.Arbitrary<T>): fc.Arbitrary<T> =>
  fc.oneof({ weight: 1, arbitrary: fc.constantFrom(...edges) }, { weight: 3, arbitrary: any })

const int = (min: number, max: number) => edgesOr([min, max, 0, -1, 1], fc.integer({ min, max }))
const int64 = (min: bigint, max: bigint, edges: ReadonlyArray<bigint>) => edgesOr(edges, fc.bigInt({ min, max }))

/**
 * float4 values as the PostgreSQL source produces them: the shortest decimal that reads back to the float4,
 * as a JS number (so `0.1` stays `0.1`, not 0.10000000149011612). NaN, ±Infinity, -0 and subnormals included.
 */
export const shortestFloat32 = (f: number): number => {
  if (!Number.isFinite(f) || f === 0) return f
  // PostgreSQL never picks a decimal exactly halfway between two float4s (68995696, not 68995700).
  const next = (direction: number) => {
    const bits = new Uint32Array(new Float32Array([f]).buffer)
    bits[0]! += direction
    return new Float32Array(bits.buffer)[0]!
  }
  const halfway = [(f + next(1)) / 2, (f + next(-1)) / 2]
  // A float4 exactly halfway between two decimals of the shortest length takes the even one (toPrecision rounds up).
  const nearest = (digits: number) => {
    const exact = f.toExponential(100).replace(/0*e.*$/, "")
    const up = Number(f.toPrecision(digits))
    if (exact.replace(/[-.]/g, "").length !== digits + 1 || !exact.endsWith("5")) return up
    const down = Number(`${exact.slice(0, -1)}${f.toExponential(100).slice(f.toExponential(100).indexOf("e"))}`)
    return Number(String(down).replace(/e.*$/, "").replace(/[-.]/g, "").slice(-1)) % 2 === 0 ? down : up
  }
  // Below a power of two float4s are twice as dense: the decimal just above may fit where the nearest does not.
  const above = (digits: number) => {
    const text = Math.abs(f).toExponential(digits - 1)
    const e = text.indexOf("e")
    return Math.sign(f) * Number(`${(Number(text.slice(0, e)) + 10 ** (1 - digits)).toFixed(digits - 1)}${text.slice(e)}`)
  }
  const isPowerOfTwo = (new Uint32Array(new Float32Array([f]).buffer)[0]! & 0x7fffff) === 0
  const fits = (candidate: number) => Math.fround(candidate) === f && !halfway.includes(candidate)
  for (let digits = 1; digits < 9; digits++) {
    const candidate = nearest(digits)
    if (fits(candidate)) return candidate
    if (isPowerOfTwo && fits(above(digits))) return above(digits)
  }
  return nearest(9)
}

const float32 = edgesOr(
  [-0, Number.NaN, Infinity, -Infinity, 3.4028235e38, -3.4028235e38, 1e-45, 1.1754944e-38, 16777216, 0.1],
  fc.float().map(shortestFloat32)
)

const float64 = edgesOr(
  [-0, Number.NaN, Infinity, -Infinity, Number.MIN_VALUE, -Number.MAX_VALUE, 2 ** 53 + 2, 0.1, 1e21, 1e-7, 123e-20],
  fc.double()
)

const DIGIT = fc.constantFrom("0", "1", "2", "3", "4", "5", "6", "7", "8", "9")

/** `decimal(p,s)` text as PostgreSQL writes `numeric(p,s)`: no `+`, no leading zeros, exactly `s` fraction digits. */
const decimal = (precision: number, scale: number): fc.Arbitrary<Value> => {
  const wholeDigits = precision - scale
  const whole = edgesOr(["9".repeat(wholeDigits), "0"], fc.string({ unit: DIGIT, maxLength: wholeDigits }))
  const smallest = scale === 0 ? "" : `${"0".repeat(scale - 1)}1`
  const fraction = edgesOr(["9".repeat(scale), "0".repeat(scale), smallest],
    fc.string({ unit: DIGIT, minLength: scale, maxLength: scale }))
  return fc.tuple(fc.boolean(), whole, fraction).map(([negative, w, f]) => {
    const digits = w.replace(/^0+/, "") || "0"
    const text = scale === 0 ? digits : `${digits}.${f}`
    return negative && /[1-9]/.test(text) ? `-${text}` : text
  })
}

const TEXT_PIECES = [
  ",", '"', "'", "\r", "\n", "\r\n", "\t", "\\", "\\N", " ", "", "a", "NULL", "null", "=SUM(A1)", "é", "e\u0301",
  "🎉", "𝕏", "👩‍👩‍👧", "\u202e", "שלום", "مرحبا", "\u2028", "\u0000", "\ufeff", "日本"
]

export const text = fc.oneof(
  fc.string({ unit: fc.constantFrom(...TEXT_PIECES), maxLength: 8 }),
  fc.string({ unit: "binary", maxLength: 12 }),
  fc.string({ unit: "grapheme", maxLength: 6 })
)

const bool = fc.boolean()

// PostgreSQL's range is 4714-11-24 BC .. 5874897-12-31; Parquet DATE holds any int32.
const date = edgesOr(
  [0, -1, -719162, -719163, 2932896, 2932897, -2440588, 2145042906, INT32_MIN, INT32_MAX, 11016, -141428],
  fc.integer({ min: INT32_MIN, max: INT32_MAX })
)

const time = int64(0n, MICROS_PER_DAY, [0n, 86_399_999_999n, MICROS_PER_DAY, 1n, 43_200_000_000n])

// Years 1 and 9999, the day before the epoch, PostgreSQL's first timestamp (4714-11-24 BC), int64 extremes.
const TIMESTAMP_EDGES = [
  0n, -1n, 1n, -62135596800000000n, 253402300799999999n, 253402300800000000n, -210866803200000000n,
  INT64_MIN, INT64_MAX, 1706067200123456n, -86_400_000_000n
]
// Beyond ±2^53 µs (years 1685 and 2255) the text formats switch from float to bigint arithmetic.
const SAFE = 2n ** 53n
const timestamp = edgesOr(TIMESTAMP_EDGES, fc.oneof(
  fc.bigInt({ min: INT64_MIN, max: INT64_MAX }),
  fc.bigInt({ min: -2208988800000000n, max: 4102444800000000n }),
  fc.bigInt({ min: SAFE - MICROS_PER_DAY, max: SAFE + MICROS_PER_DAY }),
  fc.bigInt({ min: -SAFE - MICROS_PER_DAY, max: -SAFE + MICROS_PER_DAY })
))

const hex = (bytes: Uint8Array): string => Buffer.from(bytes).toString("hex")

const uuid = edgesOr(
  ["00000000-0000-0000-0000-000000000000", "ffffffff-ffff-ffff-ffff-ffffffffffff"],
  fc.uint8Array({ minLength: 16, maxLength: 16 }).map((b) => {
    const h = hex(b)
    return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
  })
)

const JSON_TEXTS = [
  "null", "[]", "{}", '""', "0", "-0", "1e400", "12345678901234567890123", '{"a":12345678901234567890}',
  '[1, 2.50, {"b": null}, "x"]', ' {"a" : 1} ', '{\n "x": "a,b"\n}', '{\r\n\t"k": "v\\n\\u2028"\r\n}',
  '"\u2028\u2029"', '{"😀":"\\ud83d\\ude00","rtl":"\u202eשלום"}', '["\\"", "\\\\", ","]'
]

const json = edgesOr(
  JSON_TEXTS,
  fc.tuple(
    fc.jsonValue({ maxDepth: 3, stringUnit: "binary" }),
    fc.constantFrom<string | number | undefined>(undefined, 1, 2, "\t"),
    fc.boolean()
  ).map(([value, indent, crlf]) => {
    const textValue = JSON.stringify(value, null, indent)
    return crlf ? textValue.replaceAll("\n", "\r\n") : textValue
  })
)

const bytes = edgesOr(
  [new Uint8Array(), Uint8Array.of(0), Uint8Array.of(0, 0, 10, 13, 0), Uint8Array.of(255, 254, 0x22, 0x2c)],
  fc.uint8Array({ maxLength: 40 })
)

const intervalPart = (unit: string) =>
  fc.option(fc.integer({ min: -1000, max: 1000 }).map((n) => `${n}${unit}`), { nil: "" })

/** ISO 8601 durations as PostgreSQL writes them with `IntervalStyle=iso_8601`. */
const interval = edgesOr(
  ["PT0S", "P1Y2M3DT4H5M6.5S", "P-1Y", "-P1D", "PT-0.000001S", "P178000000Y"],
  fc.tuple(intervalPart("Y"), intervalPart("M"), intervalPart("D"), intervalPart("H"), intervalPart("M"),
    fc.option(fc.double({ min: -1e6, max: 1e6, noNaN: true }).map((s) => `${Math.round(s * 1e6) / 1e6}S`), { nil: "" }))
    .map(([y, mo, d, h, mi, s]) => {
      const clock = h + mi + s
      const textValue = `P${y}${mo}${d}${clock === "" ? "" : `T${clock}`}`
      return textValue === "P" ? "PT0S" : textValue
    })
)

/** The non-null values of one logical type. */
export const valueOf = (type: LogicalType): fc.Arbitrary<Value> => {
  switch (type.kind) {
    case "int16":
      return int(-32768, 32767)
    case "int32":
      return int(INT32_MIN, INT32_MAX)
    case "int64":
      return int64(INT64_MIN, INT64_MAX, [INT64_MIN, INT64_MAX, 0n, -1n, 2n ** 53n + 1n])
    case "float32":
      return float32
    case "float64":
      return float64
    case "decimal":
      return decimal(type.precision, type.scale)
    case "string":
      return text
    case "bool":
      return bool
    case "date":
      return date
    case "time":
      return time
    case "timestamp":
    case "timestamptz":
      return timestamp
    case "uuid":
      return uuid
    case "json":
      return json
    case "bytes":
      return bytes
    case "interval":
      return interval
    case "list":
      return fc.array(nullable(type.element), { maxLength: 5 })
  }
}

/** A value of `type` or SQL NULL. */
export const nullable = (type: LogicalType): fc.Arbitrary<Value> => fc.option(valueOf(type), { nil: null, freq: 5 })

const SIMPLE_KINDS = [
  "int16", "int32", "int64", "float32", "float64", "string", "bool", "date", "time", "timestamp", "timestamptz",
  "uuid", "json", "bytes", "interval"
] as const

// 9, 18 and 76 digits are where the Parquet physical type changes (INT32, INT64, FIXED_LEN_BYTE_ARRAY) or ends;
// PostgreSQL's numeric goes up to 1000.
const decimalType = (maxPrecision: number): fc.Arbitrary<LogicalType> =>
  edgesOr([...[1, 9, 10, 18, 19, 38, 76].filter((p) => p < maxPrecision), maxPrecision], fc.integer({ min: 1, max: maxPrecision }))
  .chain((precision) =>
    edgesOr([0, precision], fc.integer({ min: 0, max: precision })).map(
      (scale): LogicalType => ({ kind: "decimal", precision, scale })
    )
  )

/** Any logical type, lists of lists included, with decimals of at most `maxPrecision` digits. */
export const logicalType = (maxPrecision: number): fc.Arbitrary<LogicalType> => {
  const scalarType = fc.oneof(
    { weight: 5, arbitrary: fc.constantFrom(...SIMPLE_KINDS).map((kind): LogicalType => ({ kind })) },
    { weight: 1, arbitrary: decimalType(maxPrecision) }
  )
  return fc.oneof(
  { weight: 6, arbitrary: scalarType },
  { weight: 2, arbitrary: scalarType.map((element): LogicalType => ({ kind: "list", element })) },
  {
    weight: 1,
    arbitrary: scalarType.map((element): LogicalType => ({ kind: "list", element: { kind: "list", element } }))
  }
  )
}

const ODD_NAMES = [
  "id", "a,b", 'q"uote', "line\nbreak", "cr\rlf", " padded ", "tab\tx", "é", "🎉 party", "שם", "a.b", "x\\y",
  "__proto__", "constructor", "0", "-1", "null", "\u202etxt"
]

// Parquet and NDJSON need unique, non-empty names (the formats refuse others before writing).
const columnName = fc.oneof(fc.constantFrom(...ODD_NAMES), fc.string({ unit: "binary", minLength: 1, maxLength: 8 }))

const schemaOf = (maxPrecision: number): fc.Arbitrary<BatchSchema> => fc
  .uniqueArray(columnName, { minLength: 1, maxLength: 6 })
  .chain((names) => fc.tuple(...names.map(() => logicalType(maxPrecision))).map((types) => ({
    columns: names.map((name, c): Column => ({ name, type: types[c]! }))
  })))

/** A schema and 0–50 rows of it split over 1–3 batches (empty batches included). */
export interface Part {
  readonly schema: BatchSchema
  readonly rows: ReadonlyArray<ReadonlyArray<Value>>
  readonly batches: ReadonlyArray<Batch>
}

export const toBatches = (
  partSchema: BatchSchema,
  rows: ReadonlyArray<ReadonlyArray<Value>>,
  cuts: ReadonlyArray<number>
): Array<Batch> => {
  const bounds = [0, ...[...cuts].map((cut) => Math.min(cut, rows.length)).sort((a, b) => a - b), rows.length]
  return bounds.slice(1).map((to, i) => {
    const slice = rows.slice(bounds[i]!, to)
    return makeBatch(partSchema, partSchema.columns.map((_, c) => slice.map((row) => row[c]!)))
  })
}

/**
 * Where a column's values come from: the whole type, or (one column in four) a pool of 1–3 values, so that
 * values repeat — Parquet then dictionary-encodes them, and the text formats' per-date caches get hit.
 */
const columnValues = (type: LogicalType): fc.Arbitrary<fc.Arbitrary<Value>> => {
  const pool = fc.array(valueOf(type), { minLength: 1, maxLength: 3 })
  // A dictionary keyed by a JS Map folds -0 into 0.
  const pools = type.kind === "float32" || type.kind === "float64" ? fc.oneof(pool, fc.constant([0, -0, Number.NaN])) : pool
  return fc.oneof(
    { weight: 3, arbitrary: fc.constant(nullable(type)) },
    { weight: 1, arbitrary: pools.map((values) => fc.option(fc.constantFrom(...values), { nil: null, freq: 5 })) }
  )
}

/** A random part; Parquet takes decimals of up to 76 digits, the text formats any PostgreSQL numeric. */
export const partOf = (maxPrecision: number): fc.Arbitrary<Part> => schemaOf(maxPrecision).chain((partSchema) =>
  fc
    .tuple(...partSchema.columns.map((column) => columnValues(column.type)))
    .chain((sources) =>
      fc.tuple(fc.array(fc.tuple(...sources), { maxLength: 50, size: "medium" }), fc.array(fc.nat({ max: 50 }), { maxLength: 2 }))
    )
    .map(([rows, cuts]) => ({ schema: partSchema, rows, batches: toBatches(partSchema, rows, cuts) }))
)
