import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import { afterAll, describe, expect, it } from "vitest"
import { loadConfig } from "../../../src/api.js"
import { makeBatch } from "../../../src/core/batch.js"
import { defineSource, SourceDriver, type SourceDriverShape, type SourceQuery } from "../../../src/core/plugin.js"
import { silentProgress } from "../../../src/core/progress.js"
import { openChunkFilters } from "../../../src/engine/modes/chunked.js"
import type { ExportContext } from "../../../src/engine/modes/context.js"
import { runConfig } from "../../../src/engine/run.js"
import { sqliteStateLayer } from "../../../src/state/sqlite.js"
import { idSchema as schema } from "../../support/id-source.js"
import { readManifest } from "../../support/output.js"

// The chunk ranges of mode: chunked, planned and read against an in-memory table of consecutive ids: the ranges must
// tile [min, max] exactly, whatever the span, including spans that are exact multiples of chunk_size (where a loop
// ending one step early drops the last chunk) and a table of one key (where it would read nothing).

/** A source over the ids min..max (none when `min` is null), each id one row; records the ranges it was asked for. */
const rangeSource = (min: number | null, max: number | null) => {
  const asked: Array<readonly [bigint, bigint]> = []
  const driver: SourceDriverShape = {
    label: "ranges",
    displayUrl: "ranges:",
    check: Effect.void,
    describe: () => Effect.succeed({ schema, primaryKey: ["id"] }),
    bounds: () =>
      Effect.succeed({ min: min === null ? null : String(min), max: max === null ? null : String(max), hasNulls: false }),
    open: (query: SourceQuery) =>
      Effect.suspend(() => {
        const range = query.where?.[0]
        if (range?._tag !== "Between") return Effect.die("a chunk query has one Between filter")
        const low = BigInt(range.low)
        const high = BigInt(range.high)
        asked.push([low, high])
        const ids: Array<bigint> = []
        if (min !== null && max !== null) {
          for (let id = low > BigInt(min) ? low : BigInt(min); id <= high && id <= BigInt(max); id++) ids.push(id)
        }
        return Effect.succeed({ schema, batches: ids.length === 0 ? Stream.empty : Stream.make(makeBatch(schema, [ids])) })
      })
  }
  const plugin = defineSource({ type: "ranges", config: Schema.Struct({}), make: () => Layer.succeed(SourceDriver, driver) })
  return { plugin, asked: () => [...asked].sort((a, b) => (a[0] < b[0] ? -1 : 1)) }
}

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const runChunked = async (min: number | null, max: number | null, chunkSize: number) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-chunk-ranges-"))
  dirs.push(dir)
  const source = rangeSource(min, max)
  const config = {
    source: { type: "ranges" },
    exports: [
      { name: "ids", table: "ids", mode: "chunked", chunk_size: chunkSize, parallel: 2, format: "csv", destination: { type: "local", path: "out" } }
    ]
  }
  const [outcome] = await Effect.runPromise(
    Effect.flatMap(loadConfig(config as never, { configDir: dir, plugins: [source.plugin as never] }), (loaded) =>
      runConfig(loaded, { state: sqliteStateLayer(":memory:") })
    ).pipe(Effect.provide(silentProgress))
  )
  if (outcome?._tag !== "success") throw new Error(`the run failed: ${outcome?.error.message}`)
  const out = path.join(dir, "out")
  const exported = readManifest(out).parts.flatMap((part) =>
    fs
      .readFileSync(path.join(out, part.path), "utf8")
      .split("\n")
      .slice(1)
      .filter((line) => line.length > 0)
      .map(Number)
  )
  return { rows: outcome.result.rows, exported: exported.sort((a, b) => a - b), asked: source.asked() }
}

/** What the ranges must be: consecutive, each chunk_size wide but the last, from min to max. */
const expectedRanges = (min: number, max: number, size: number): Array<readonly [bigint, bigint]> => {
  const ranges: Array<readonly [bigint, bigint]> = []
  for (let low = min; low <= max; low += size) ranges.push([BigInt(low), BigInt(Math.min(low + size - 1, max))])
  return ranges
}

const ids = (min: number, max: number) => Array.from({ length: max - min + 1 }, (_, i) => min + i)

describe("chunk ranges", () => {
  it.each([
    ["a span that is an exact multiple of chunk_size (the last chunk holds one key)", 1, 21, 10],
    ["a span one short of a multiple (the last chunk is full)", 1, 20, 10],
    ["a span one over a multiple", 1, 22, 10],
    ["negative keys, span a multiple of chunk_size", -15, 15, 10],
    ["chunk_size 1", 5, 9, 1],
    ["one key", 7, 7, 10],
    ["one key, chunk_size 1", 7, 7, 1],
    ["two keys, chunk_size 1 (span 1 = chunk_size)", 7, 8, 1]
  ])("%s: the ranges tile [min, max] and every row is exported once", async (_label, min, max, size) => {
    const result = await runChunked(min, max, size)
    expect(result.asked).toEqual(expectedRanges(min, max, size))
    expect(result.exported).toEqual(ids(min, max))
    expect(result.rows).toBe(max - min + 1)
  })

  it("an empty table plans no range and exports no row", async () => {
    const result = await runChunked(null, null, 10)
    expect(result.asked).toEqual([])
    expect(result.exported).toEqual([])
    expect(result.rows).toBe(0)
  })
})

describe("openChunkFilters (cdc's first-run snapshot, read on a later snapshot than its bounds)", () => {
  // Only the export's name is read, for the error of too many chunks.
  const ctx = { spec: { name: "orders" } } as unknown as ExportContext
  const filters = (min: string | null, max: string | null, hasNulls = false) =>
    Effect.runSync(openChunkFilters(ctx, "id", 1000, { min, max, hasNulls }))

  it("open-ended first and last ranges, closed ones between, and a piece for NULL keys whatever the bounds saw", () => {
    expect(filters("1", "3500")).toEqual([
      [{ _tag: "AtMost", column: "id", value: "1000" }],
      [{ _tag: "Between", column: "id", low: "1001", high: "2000" }],
      [{ _tag: "Between", column: "id", low: "2001", high: "3000" }],
      [{ _tag: "AtLeast", column: "id", value: "3001" }],
      [{ _tag: "IsNull", column: "id" }]
    ])
  })

  it("one range or none (an empty table, one key, a span within chunk_size): one piece without filters, all rows", () => {
    expect(filters(null, null, true)).toEqual([[]])
    expect(filters("7", "7")).toEqual([[]])
    expect(filters("1", "1000", true)).toEqual([[]])
  })
})
