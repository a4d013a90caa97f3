import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { afterAll, describe, expect, it } from "vitest"
import { loadConfig } from "../../src/api.js"
import { makeBatch } from "../../src/core/batch.js"
import { SourceError } from "../../src/core/errors.js"
import type { SourceQuery } from "../../src/core/plugin.js"
import { type ExportProgress, ProgressReporter, type ProgressReporterShape } from "../../src/core/progress.js"
import { runConfig } from "../../src/engine/run.js"
import { sqliteStateLayer } from "../../src/state/sqlite.js"
import { idSchema as schema, idSource } from "../support/id-source.js"

// What a reporter sees of a run: the counters it is shown must end equal to what the manifest lists, even when a
// chunk fails half-way and is read again, and a reporter that takes its time must not break the run.

const MAX = 400

/** Ids 1..MAX in batches of 10; the chunk starting at `flaky` fails once after its first batch (a lost connection). */
const idsSource = (options: { readonly estimate: Effect.Effect<number | undefined, SourceError>; readonly flaky?: string }) => {
  const failed = new Set<string>()
  const open = (query: SourceQuery) =>
    Effect.suspend(() => {
      const filter = query.where?.[0]
      const low = filter?._tag === "Between" ? Number(filter.low) : filter?._tag === "After" ? Number(filter.values[0]) + 1 : 1
      const last = filter?._tag === "Between" ? Number(filter.high) : MAX
      const high = Math.min(last, query.limit === undefined ? MAX : low + query.limit - 1)
      const batches = Stream.range(low, high).pipe(
        Stream.grouped(10),
        Stream.map((ids) => makeBatch(schema, [[...ids].map(BigInt)]))
      )
      if (String(low) !== options.flaky || failed.has(String(low))) return Effect.succeed({ schema, batches })
      failed.add(String(low))
      const lost = new SourceError({ source: "ids", message: "connection lost", retryable: true })
      return Effect.succeed({ schema, batches: Stream.concat(Stream.take(batches, 1), Stream.fail(lost)) })
    })
  return idSource("ids", MAX, open, () => options.estimate)
}

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

interface Seen {
  readonly started: Array<ExportProgress>
  readonly ticks: Array<ExportProgress>
  readonly parts: Array<string>
}

const run = async (
  plugin: ReturnType<typeof idsSource>,
  exportKeys: Record<string, unknown>,
  delay: (seen: Seen) => Effect.Effect<void> = () => Effect.void
) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-progress-"))
  dirs.push(dir)
  const seen: Seen = { started: [], ticks: [], parts: [] }
  const reporter: ProgressReporterShape = {
    started: (progress) => Effect.zipRight(delay(seen), Effect.sync(() => void seen.started.push(progress))),
    tick: (progress) => Effect.zipRight(delay(seen), Effect.sync(() => void seen.ticks.push(progress))),
    finished: () => delay(seen),
    partCommitted: (_name, part) => Effect.zipRight(delay(seen), Effect.sync(() => void seen.parts.push(part.path))),
    notice: () => delay(seen),
    intervalMs: 10
  }
  const config = {
    source: { type: "ids" },
    exports: [{ name: "ids", table: "ids", format: "csv", destination: { type: "local", path: "out" }, ...exportKeys }]
  }
  const [outcome] = await Effect.runPromise(
    Effect.flatMap(loadConfig(config as never, { configDir: dir, plugins: [plugin as never] }), (loaded) =>
      runConfig(loaded, { retry: { maxRetries: 3, initialDelay: "1 millis", maxDelay: "2 millis" }, state: sqliteStateLayer(":memory:") })
    ).pipe(Effect.provide(Layer.succeed(ProgressReporter, reporter)))
  )
  if (outcome?._tag !== "success") throw new Error(`the run failed: ${outcome?.error.message}`)
  return { result: outcome.result, seen }
}

describe("progress", () => {
  it.each([{ mode: "full" }, { mode: "chunked", chunk_size: 100 }, { mode: "keyset", page_size: 100 }])(
    "knows the source's row estimate from the start ($mode)",
    async (keys) => {
      const { seen } = await run(idsSource({ estimate: Effect.succeed(123) }), keys)
      expect(seen.started.map((progress) => progress.estimatedRows)).toEqual([123])
    }
  )

  it("an estimate that fails leaves it unknown and the run goes on", async () => {
    const failing = Effect.fail(new SourceError({ source: "ids", message: "no statistics", retryable: false }))
    const { result, seen } = await run(idsSource({ estimate: failing }), { mode: "chunked", chunk_size: 100 })
    expect(seen.started[0]?.estimatedRows).toBeUndefined()
    expect(result.rows).toBe(MAX)
  })

  it("a chunked parallel run with a retried chunk ends with counters equal to its manifest, under a slow async reporter", async () => {
    const sleepy = () => Effect.sleep("50 millis")
    const { result, seen } = await run(
      idsSource({ estimate: Effect.succeed(MAX), flaky: "101" }),
      { mode: "chunked", chunk_size: 100, parallel: 2 },
      sleepy
    )
    const manifest = result.manifest!
    const last = seen.ticks.at(-1)!
    expect(manifest.row_count).toBe(MAX)
    expect(last).toMatchObject({
      rows: manifest.row_count,
      parts: manifest.part_count,
      bytes: manifest.parts.reduce((sum, part) => sum + part.size_bytes, 0),
      retries: 1,
      units: { done: 4, total: 4, label: "chunks" }
    })
    expect(result.retries).toBe(1)
    expect(seen.parts.sort()).toEqual(manifest.parts.map((part) => part.path).sort())
    // Live counters never go past what the run ends with: a failed attempt's rows are never added, so never withdrawn.
    for (const tick of seen.ticks) expect(tick.rows).toBeLessThanOrEqual(MAX)
  })
})
