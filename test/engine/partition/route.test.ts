import { describe, expect, it } from "@effect/vitest"
import { type BatchSchema, batchToRows, makeBatch } from "../../../src/core/batch.js"
import { ConfigError } from "../../../src/core/errors.js"
import { partitionOf } from "../../../src/config/partition.js"
import { groupRows } from "../../../src/engine/partition/encode.js"
import { takeRows } from "../../../src/engine/partition/take.js"
import { partitionLayout, truncatedText } from "../../../src/engine/partition/values.js"

const schema: BatchSchema = {
  columns: [
    { name: "id", type: { kind: "int64" } },
    { name: "country", type: { kind: "string" } },
    { name: "at", type: { kind: "timestamptz" } },
    { name: "day", type: { kind: "date" } },
    { name: "tags", type: { kind: "list", element: { kind: "string" } } },
    { name: "ok", type: { kind: "bool" } },
    { name: "u", type: { kind: "uuid" } }
  ]
}

const specOf = (entries: ReadonlyArray<string>, keep = false) =>
  partitionOf({ partition_by: entries, partition_keep_columns: keep }, "exports[0]", "local").spec!

describe("partition layout and row routing", () => {
  it("truncates timestamps and dates in UTC, also before 1970", () => {
    const micros = Date.UTC(2024, 4, 17, 13, 59, 59) * 1000
    const layout = partitionLayout(specOf(["at:hour", "at:month", "day:year", "day:day"]), schema)
    if (layout instanceof ConfigError) throw layout
    const batch = makeBatch(schema, [[1n, 2n], ["a", "b"], [BigInt(micros), -1n], [19_860, -1], [null, null], [true, null], [null, null]])
    const read = (c: number, row: number) => layout.readers[c]!.read(batch.columns[layout.readers[c]!.index]!, row)
    expect([0, 1, 2, 3].map((c) => read(c, 0))).toEqual(["2024-05-17T13", "2024-05", "2024", "2024-05-17"])
    expect([0, 1, 2, 3].map((c) => read(c, 1))).toEqual(["1969-12-31T23", "1969-12", "1969", "1969-12-31"])
    expect(truncatedText("month", 0, 0)).toBe("1970-01")
  })

  it("drops plain partition columns from the files unless kept; truncated ones always stay", () => {
    const dropped = partitionLayout(specOf(["country", "at:month"]), schema)
    const kept = partitionLayout(specOf(["country", "at:month"], true), schema)
    if (dropped instanceof ConfigError || kept instanceof ConfigError) throw new Error("unexpected")
    expect(dropped.fileSchema.columns.map((column) => column.name)).toEqual(["id", "at", "day", "tags", "ok", "u"])
    expect(dropped.keys).toEqual(["country", "at_month"])
    expect(kept.fileSchema.columns).toHaveLength(7)
  })

  it("names the config path for an unknown column, a granularity on a non-temporal column and an unusable type", () => {
    const errors = [["nope"], ["country:month"], ["day:hour"], ["tags"]].map((entries) => partitionLayout(specOf(entries), schema))
    expect(errors.map((error) => (error instanceof ConfigError ? [error.path, error.message] : undefined))).toEqual([
      ["exports[0].partition_by[0]", "'nope': the result has no column 'nope'"],
      ["exports[0].partition_by[0]", "'country:month': :month needs a date or timestamp column, 'country' is string"],
      ["exports[0].partition_by[0]", "'day:hour': :hour needs a timestamp column, 'day' is date"],
      ["exports[0].partition_by[0]", "'tags': a list column cannot name a directory"]
    ])
    expect(partitionOf({ partition_by: ["a"] }, "exports[2]", "stdout").problems.map((error) => error.path)).toEqual(["exports[2].partition_by"])
    expect(partitionOf({ max_open_partitions: 3 }, "exports[0]", "local").problems.map((error) => error.path)).toEqual(["exports[0].max_open_partitions"])
    expect(partitionOf({ partition_by: ["a", "a"] }, "exports[0]", "local").problems.map((error) => error.path)).toEqual(["exports[0].partition_by[1]"])
  })

  it("groups rows by their whole tuple of values, whatever characters the values hold", () => {
    const pair: BatchSchema = {
      columns: [{ name: "a", type: { kind: "string" } }, { name: "b", type: { kind: "string" } }, { name: "n", type: { kind: "int32" } }]
    }
    const layout = partitionLayout(partitionOf({ partition_by: ["a", "b"] }, "exports[0]", "local").spec!, pair)
    if (layout instanceof ConfigError) throw layout
    const batch = makeBatch(pair, [["x\u0002y", "x", "x\u0002y", null, ""], ["z", "y\u0002z", "z", "", null], [1, 2, 3, 4, 5]])
    const { values, start } = groupRows(batch, layout)
    // NULL and "" share Hive's default partition; the two tuples that concatenate alike stay apart.
    expect(values).toEqual([["x\u0002y", "z"], ["x", "y\u0002z"], [null, null]])
    expect([...start]).toEqual([0, 2, 3, 5])
  })

  it("takes rows of every layout, NULLs and lists included", () => {
    const batch = makeBatch(schema, [
      [1n, 2n, 3n, 4n],
      ["a", null, "ccc", "é"],
      [10n, null, 30n, 40n],
      [1, 2, null, 4],
      [["x"], null, [], ["y", null, "z"]],
      [true, false, null, true],
      ["00000000-0000-0000-0000-000000000001", null, "00000000-0000-0000-0000-000000000003", "00000000-0000-0000-0000-000000000004"]
    ])
    const all = batchToRows(batch)
    const picked = takeRows(batch, schema, [0, 1, 2, 3, 4, 5, 6], new Int32Array([3, 1, 0]), 3)
    expect(batchToRows(picked)).toEqual([all[3], all[1], all[0]])
    const narrow = takeRows(batch, { columns: [schema.columns[4]!] }, [4], new Int32Array([2, 3]), 2)
    expect(batchToRows(narrow)).toEqual([{ tags: [] }, { tags: ["y", null, "z"] }])
  })
})
