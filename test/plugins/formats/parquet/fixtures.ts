import * as Effect from "effect/Effect"
import { type BatchSchema, type Column, makeBatch, type Value } from "../../../../src/core/batch.js"
import type { FormatError } from "../../../../src/core/errors.js"
import type { PartEncoder } from "../../../../src/core/plugin.js"

/** One column of every logical type, each with NULLs and edge values. */
export const allTypesColumns: ReadonlyArray<Column> = [
  { name: "i16", type: { kind: "int16" } },
  { name: "i32", type: { kind: "int32" } },
  { name: "i64", type: { kind: "int64" } },
  { name: "f32", type: { kind: "float32" } },
  { name: "f64", type: { kind: "float64" } },
  { name: "dec_5_2", type: { kind: "decimal", precision: 5, scale: 2 } },
  { name: "dec_18_4", type: { kind: "decimal", precision: 18, scale: 4 } },
  { name: "dec_38_10", type: { kind: "decimal", precision: 38, scale: 10 } },
  { name: "dec_50_0", type: { kind: "decimal", precision: 50, scale: 0 } },
  { name: "txt", type: { kind: "string" } },
  { name: "flag", type: { kind: "bool" } },
  { name: "day", type: { kind: "date" } },
  { name: "clock", type: { kind: "time" } },
  { name: "ts", type: { kind: "timestamp" } },
  { name: "tstz", type: { kind: "timestamptz" } },
  { name: "id", type: { kind: "uuid" } },
  { name: "doc", type: { kind: "json" } },
  { name: "blob", type: { kind: "bytes" } },
  { name: "span", type: { kind: "interval" } },
  { name: "ints", type: { kind: "list", element: { kind: "int32" } } },
  { name: "words", type: { kind: "list", element: { kind: "string" } } },
  { name: "amounts", type: { kind: "list", element: { kind: "decimal", precision: 10, scale: 2 } } },
  { name: "ids", type: { kind: "list", element: { kind: "uuid" } } },
  { name: "stamps", type: { kind: "list", element: { kind: "timestamptz" } } },
  { name: "grid", type: { kind: "list", element: { kind: "list", element: { kind: "int64" } } } }
]

export const allTypesSchema: BatchSchema = { columns: allTypesColumns }

const bytes = (...values: Array<number>) => Uint8Array.from(values)

/** Rows in column order; every column has at least one NULL, and row 0 is all NULL. */
export const allTypesRows: ReadonlyArray<ReadonlyArray<Value>> = [
  allTypesColumns.map(() => null),
  [
    -32768, -2147483648, -(2n ** 63n), -3.4028234663852886e38, Number.NEGATIVE_INFINITY,
    "-999.99", "-99999999999999.9999", "-1234567890123456789012345678.0123456789",
    "-99999999999999999999999999999999999999999999999999",
    "", false, -719162, 0n, -62135596800000000n, -1n,
    "00000000-0000-0000-0000-000000000000", "null", bytes(), "-P1D",
    [], [], [], [], [], []
  ],
  [
    32767, 2147483647, 2n ** 63n - 1n, 3.4028234663852886e38, Number.POSITIVE_INFINITY,
    "999.99", "99999999999999.9999", "9999999999999999999999999999.9999999999",
    "99999999999999999999999999999999999999999999999999",
    "héllo wörld 🚀 \"quoted\", 'single'\nnew line\r\n\ttab", true, 2932896, 86399999999n,
    253402300799999999n, 4102444800000000n,
    "ffffffff-ffff-ffff-ffff-ffffffffffff", "{\"a\":12345678901234567890}", bytes(0, 0, 1, 0, 255, 0),
    "P1Y2M3DT4H5M6.5S",
    [1, null, 3], ["a", null, "", "ü"], ["-0.01", null, "12345678.90"],
    ["123e4567-e89b-12d3-a456-426614174000", null], [-1n, null, 1700000000123456n], [[1n, null], [], null, [3n]]
  ],
  [
    0, 0, 0n, Number.NaN, -0,
    "0.00", "0.0000", "0.0000000000", "0", "a longer string that is well past sixteen bytes of statistics",
    null, 0, 43200000000n, 1n, 1700000000123456n,
    "123e4567-e89b-12d3-a456-426614174000", "[1, 2.50, {\"b\": null}, \"x\"]", bytes(0), "PT0S",
    null, null, null, null, null, null
  ],
  [
    null, 7, null, 1.5, 0.1,
    "-0.05", "-0.0001", "0.0000000001", null, null,
    true, null, null, null, null,
    null, null, null, null,
    [null], [null], [null], [null], [null], [[null]]
  ]
]

/** The rows as objects keyed by column name (what reading the file back should give). */
export const rowObjects = (
  columns: ReadonlyArray<Column>,
  rows: ReadonlyArray<ReadonlyArray<Value>>
): Array<Record<string, unknown>> =>
  rows.map((row) => Object.fromEntries(columns.map((column, c) => [column.name, row[c] ?? null])))

/** Writes `rows` in batches of the given sizes (cycled) and finishes; returns the chunks of every call. */
export const encodeAll = (
  encoder: PartEncoder,
  schema: BatchSchema,
  rows: ReadonlyArray<ReadonlyArray<Value>>,
  batchSizes: ReadonlyArray<number>
): Effect.Effect<{ writes: Array<ReadonlyArray<Uint8Array>>; finish: ReadonlyArray<Uint8Array> }, FormatError> =>
  Effect.gen(function* () {
    const writes: Array<ReadonlyArray<Uint8Array>> = []
    let from = 0
    for (let i = 0; from < rows.length; i++) {
      const to = Math.min(rows.length, from + batchSizes[i % batchSizes.length]!)
      const slice = rows.slice(from, to)
      writes.push(yield* encoder.write(makeBatch(schema, schema.columns.map((_, c) => slice.map((row) => row[c]!)))))
      from = to
    }
    return { writes, finish: yield* encoder.finish }
  })
