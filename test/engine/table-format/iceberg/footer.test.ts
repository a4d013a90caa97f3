import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { type BatchSchema, makeBatch, type Value } from "../../../../src/core/batch.js"
import { FormatDriver } from "../../../../src/core/plugin.js"
import { footerFacts } from "../../../../src/engine/table-format/iceberg/footer.js"
import { evolveSchema, withFieldIds } from "../../../../src/engine/table-format/iceberg/schema.js"
import parquet from "../../../../src/plugins/formats/parquet/index.js"

/** A Parquet file of `columns` (one value list per column) written by Rivet's writer with the table's field ids. */
const parquetFile = (schema: BatchSchema, columns: ReadonlyArray<ReadonlyArray<Value>>, rowGroupSize = 1000) =>
  Effect.gen(function* () {
    const config = yield* Schema.decodeUnknown(parquet.config)({ row_group_size: rowGroupSize }).pipe(Effect.orDie)
    const format = yield* Effect.provide(FormatDriver, parquet.make(config, { configDir: ".", env: {} }))
    const encoder = yield* format.open(withFieldIds(schema, evolveSchema(undefined, schema, 0).fields))
    const written = yield* encoder.write(makeBatch(schema, columns))
    return new Uint8Array(Buffer.concat([...written, ...(yield* encoder.finish)]))
  })

const hex = (bytes: Uint8Array | undefined) => (bytes === undefined ? undefined : Buffer.from(bytes).toString("hex"))

describe("Iceberg metrics from a Parquet footer", () => {
  it.effect("bounds in the spec's single-value encoding: decimals big-endian in the fewest bytes, numbers little-endian, text as UTF-8", () =>
    Effect.gen(function* () {
      const schema: BatchSchema = {
        columns: [
          { name: "small", type: { kind: "decimal", precision: 5, scale: 2 } },
          { name: "wide", type: { kind: "decimal", precision: 30, scale: 0 } },
          { name: "n", type: { kind: "int32" } },
          { name: "at", type: { kind: "timestamptz" } },
          { name: "s", type: { kind: "string" } },
          { name: "tags", type: { kind: "list", element: { kind: "string" } } }
        ]
      }
      const file = yield* parquetFile(
        schema,
        [
          ["-1.50", "2.25", null],
          ["-129", "32768", "1"],
          [7, -3, null],
          [1_700_000_000_000_000n, -1n, null],
          ["b", "ab", "é"],
          [["x"], null, []]
        ],
        2
      )
      const facts = footerFacts(file)
      expect(facts.rowCount).toBe(3)
      // Across two row groups: the least and greatest exact statistics.
      expect(hex(facts.lowerBounds.get(1))).toBe("ff6a") // -150
      expect(hex(facts.upperBounds.get(1))).toBe("00e1") // 225 needs a sign byte
      expect(hex(facts.lowerBounds.get(2))).toBe("ff7f") // -129
      expect(hex(facts.upperBounds.get(2))).toBe("008000") // 32768
      expect(facts.lowerBounds.get(3)).toEqual(Uint8Array.from([0xfd, 0xff, 0xff, 0xff])) // -3, 4 bytes LE
      expect(Buffer.from(facts.upperBounds.get(4)!).readBigInt64LE()).toBe(1_700_000_000_000_000n)
      expect(Buffer.from(facts.lowerBounds.get(5)!).toString("utf8")).toBe("ab")
      expect(Buffer.from(facts.upperBounds.get(5)!).toString("utf8")).toBe("é")
      expect([facts.valueCounts.get(1), facts.nullCounts.get(1), facts.nullCounts.get(3)]).toEqual([3, 1, 1])
      // A list column's counts are its element's (field id 7: the list is 6), and it has no bounds.
      expect(facts.valueCounts.has(7)).toBe(true)
      expect(facts.lowerBounds.has(7) || facts.lowerBounds.has(6)).toBe(false)
    }))
})
