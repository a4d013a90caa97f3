import { describe, expect, it } from "@effect/vitest"
import { type BatchSchema, makeBatch, type Value } from "../../../src/core/batch.js"
import { ConfigError } from "../../../src/core/errors.js"
import { partitionOf } from "../../../src/config/partition.js"
import { hoursOfMicros } from "../../../src/engine/partition/codes.js"
import { partitionLayout } from "../../../src/engine/partition/values.js"

const HOUR = 3_600_000_000n
const floorHours = (micros: bigint) => (micros / HOUR) * HOUR > micros ? micros / HOUR - 1n : micros / HOUR

const schema: BatchSchema = {
  columns: [
    { name: "s", type: { kind: "string" } },
    { name: "at", type: { kind: "timestamptz" } },
    { name: "day", type: { kind: "date" } },
    { name: "n", type: { kind: "int32" } },
    { name: "ok", type: { kind: "bool" } }
  ]
}

// A deterministic generator, so a failure is reproducible.
const random = (seed: number) => () => ((seed = Math.imul(seed ^ (seed >>> 15), 0x2c1b3c6d) + 0x6d2b79f5) >>> 0) / 2 ** 32

describe("partition column codes", () => {
  it("floors µs to hours exactly at every boundary before and after 1970, and leaves values beyond ±2^53 µs to the per-row reader", () => {
    const micros = [0n, -1n, 1n, HOUR - 1n, HOUR, -HOUR, -HOUR - 1n, 2n ** 53n - 1n, -(2n ** 53n) + 1n, 1_700_000_000_000_000n - 1n]
    // Hours a year apart, and the last ones below 2^53 µs, where a µs is less than a Number's step at the quotient.
    const boundaries = [...Array.from({ length: 200 }, (_, i) => BigInt(i - 100) * 8_760n * HOUR), ...[2_500_000n, 2_501_999n].flatMap((k) => [k * HOUR, -k * HOUR])]
    const all = [...micros, ...boundaries.flatMap((at) => [at - 1n, at, at + 1n])]
    const hoursAt = hoursOfMicros({ layout: "int64", values: BigInt64Array.from(all), length: all.length, nullCount: 0, validity: undefined })!
    expect(all.map((_, row) => hoursAt(row))).toEqual(all.map((value) => Number(floorHours(value))))
    // Beyond 2^53 µs no Number is exact: the row is left to the per-row reader.
    const far = hoursOfMicros({ layout: "int64", values: BigInt64Array.from([2n ** 60n, -(2n ** 60n)]), length: 2, nullCount: 0, validity: undefined })!
    expect([far(0), far(1)]).toEqual([undefined, undefined])
  })

  it("gives every row the text its per-row reader gives, for random batches of every coded kind", () => {
    const next = random(7)
    const pick = <A>(options: ReadonlyArray<A>) => options[Math.floor(next() * options.length)]!
    const strings = ["", "a", "b", "ab", "é", "日本", "a/b", "x\u0002y", "100%"]
    const layout = partitionLayout(
      partitionOf({ partition_by: ["s", "at:hour", "at:day", "at:month", "at:year", "day:month", "n", "ok"] }, "exports[0]", "local").spec!,
      schema
    )
    if (layout instanceof ConfigError) throw layout
    for (let round = 0; round < 30; round++) {
      const rows = 1 + Math.floor(next() * 300)
      const column = (make: () => Value) => Array.from({ length: rows }, () => (next() < 0.1 ? null : make()))
      const batch = makeBatch(schema, [
        column(() => pick(strings)),
        // Around hour boundaries within ±2^53 µs, and now and then far beyond it (read per row).
        column(() => (next() < 0.05 ? pick([2n ** 62n, -(2n ** 62n)]) : BigInt(Math.floor((next() - 0.5) * 2 ** 22)) * HOUR + pick([0n, -1n, 1n, 1_234_567n]))),
        column(() => Math.floor((next() - 0.5) * 200_000)),
        column(() => pick([0, 1, -5])),
        column(() => next() < 0.5)
      ])
      for (const reader of layout.readers) {
        const data = batch.columns[reader.index]!
        const { codes, texts } = reader.encode(data, rows)
        const read = Array.from({ length: rows }, (_, row) => {
          const text = reader.read(data, row)
          return text === "" ? null : text
        })
        expect(Array.from(codes, (code) => texts[code])).toEqual(read)
        // One code per distinct text, numbered in order of first appearance.
        expect(new Set(texts).size).toBe(texts.length)
        const firstRows = texts.map((_, code) => codes.indexOf(code))
        expect(firstRows).toEqual([...firstRows].sort((a, b) => a - b))
      }
    }
  })
})
