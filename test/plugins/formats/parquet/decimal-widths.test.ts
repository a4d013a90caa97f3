import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { BatchSchema, Column, Value } from "../../../../src/core/batch.js"
import { FormatDriver } from "../../../../src/core/plugin.js"
import parquet from "../../../../src/plugins/formats/parquet/index.js"
import { encodeAll } from "./fixtures.js"
import { concat, metadataOf, readRowArrays, unscaledToText } from "./read-back.js"

// Decimals at every physical-type boundary, checked in the written file's footer against the Parquet specification
// (LogicalTypes.md, DECIMAL) rather than against the writer's own helpers, and read back value by value:
//   int32 for 1 ≤ precision ≤ 9, int64 for precision ≤ 18, and above that fixed_len_byte_array(n) with the fewest
//   bytes n whose two's complement holds the precision: n bytes hold floor(log10(2^(8n−1) − 1)) digits.
// A writer declaring one width and writing another shows here as a wrong footer or as values that do not come back.

/** The most digits n bytes hold, as the specification words it: floor(log10(2^(8n−1) − 1)). */
const digitsIn = (bytes: number): number => ((1n << BigInt(8 * bytes - 1)) - 1n).toString().length - 1

/** The physical type the specification allows with the fewest bytes for `precision` digits. */
const specPhysical = (precision: number): { type: string; type_length?: number } => {
  if (precision <= 9) return { type: "INT32" }
  if (precision <= 18) return { type: "INT64" }
  let bytes = 1
  while (digitsIn(bytes) < precision) bytes++
  return { type: "FIXED_LEN_BYTE_ARRAY", type_length: bytes }
}

// The table the formula gives, written out as a check of the formula itself.
const KNOWN_WIDTHS: Record<number, number> = { 19: 9, 21: 9, 22: 10, 38: 16, 39: 17, 40: 17, 41: 18, 76: 32 }

const CASES: ReadonlyArray<readonly [precision: number, scale: number]> = [
  [1, 0], [1, 1], [9, 0], [9, 4], [10, 0], [10, 2], [18, 0], [18, 18], [19, 0], [19, 5], [21, 3], [22, 0],
  [38, 0], [38, 10], [39, 2], [40, 0], [41, 41], [76, 0], [76, 38]
]

const columns: ReadonlyArray<Column> = CASES.map(([precision, scale]) => ({
  name: `d_${precision}_${scale}`,
  type: { kind: "decimal", precision, scale }
}))
const schema: BatchSchema = { columns }

/** Unscaled values at the edges of each precision: ±(10^p − 1), ±1, 0, a mixed one, and NULL. */
const unscaledValues = (precision: number): ReadonlyArray<bigint | null> => {
  const largest = 10n ** BigInt(precision) - 1n
  const mixed = BigInt("1234567890".repeat(8).slice(0, precision))
  return [largest, -largest, 0n, 1n, -1n, mixed, -mixed, null, 10n ** BigInt(precision - 1)]
}

const texts: ReadonlyArray<ReadonlyArray<string | null>> = CASES.map(([precision, scale]) =>
  unscaledValues(precision).map((value) => (value === null ? null : unscaledToText(value, scale)))
)
const rows: ReadonlyArray<ReadonlyArray<Value>> = texts[0]!.map((_, row) => texts.map((column) => column[row]!))

const driver = Effect.provide(
  FormatDriver,
  parquet.make(Schema.decodeUnknownSync(parquet.config)({}), { configDir: ".", env: {} })
).pipe(Effect.orDie)

const writeFile = Effect.gen(function* () {
  const encoder = yield* (yield* driver).open(schema)
  const { writes, finish } = yield* encodeAll(encoder, schema, rows, [4, 5])
  return concat([...writes.flat(), ...finish])
})

describe("parquet decimal widths", () => {
  it("the specification's widths, computed, match the table", () => {
    for (const [precision, bytes] of Object.entries(KNOWN_WIDTHS)) {
      expect(specPhysical(Number(precision)), `precision ${precision}`).toEqual({ type: "FIXED_LEN_BYTE_ARRAY", type_length: bytes })
    }
  })

  it.effect("every precision at a boundary gets the physical type and width the specification gives, in the schema and in each column chunk", () =>
    Effect.gen(function* () {
      const metadata = metadataOf(yield* writeFile)
      for (const [index, [precision, scale]] of CASES.entries()) {
        const name = columns[index]!.name
        const element = metadata.schema.find((candidate) => candidate.name === name)
        expect(element, name).toEqual({
          name,
          repetition_type: "OPTIONAL",
          ...specPhysical(precision),
          converted_type: "DECIMAL",
          logical_type: { type: "DECIMAL", precision, scale },
          precision,
          scale
        })
        for (const group of metadata.row_groups) {
          expect(group.columns[index]!.meta_data?.type, name).toBe(specPhysical(precision).type)
          expect(group.columns[index]!.meta_data?.path_in_schema, name).toEqual([name])
        }
      }
    })
  )

  it.effect("the values at each width's edges come back exactly, NULL included", () =>
    Effect.gen(function* () {
      const file = yield* writeFile
      const read = yield* Effect.promise(() => readRowArrays(file))
      expect(read).toEqual(rows)
    })
  )
})
