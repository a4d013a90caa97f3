import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import { afterAll, describe, expect, it } from "vitest"
import { loadConfig } from "../../../src/api.js"
import { makeBatch } from "../../../src/core/batch.js"
import { exitCodeOf, SourceError } from "../../../src/core/errors.js"
import type { SourceQuery } from "../../../src/core/plugin.js"
import { ProgressReporter, type ProgressReporterShape } from "../../../src/core/progress.js"
import { runConfig } from "../../../src/engine/run.js"
import { sqliteStateLayer } from "../../../src/state/sqlite.js"
import { idSchema as schema, idSource } from "../../support/id-source.js"
import { filesUnder } from "../../support/output.js"

// chunk_max_attempts: how often one chunk (or page) is read before the run gives up, against a source whose chunk
// 3..4 loses its connection a given number of times.

/** A source of ids 1..4 whose chunk starting at 3 fails with a retryable error its first `failures` times. */
const flakySource = (failures: number) => {
  const opened = new Map<string, number>()
  const plugin = idSource("flaky", 4, (query: SourceQuery) =>
    Effect.suspend(() => {
      const range = query.where?.[0]
      if (range?._tag !== "Between") return Effect.die("a chunk query has one Between filter")
      const attempt = (opened.get(range.low) ?? 0) + 1
      opened.set(range.low, attempt)
      const ids = [BigInt(range.low), BigInt(range.high)]
      const batches = Stream.make(makeBatch(schema, [ids]))
      const lost = new SourceError({ source: "flaky", message: `connection lost (attempt ${attempt})`, retryable: true })
      return Effect.succeed({
        schema,
        batches: range.low === "3" && attempt <= failures ? Stream.concat(batches, Stream.fail(lost)) : batches
      })
    })
  )
  return { plugin, attemptsOf: (low: string) => opened.get(low) ?? 0 }
}

const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const runChunked = async (failures: number, exportKeys: Record<string, unknown>) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-attempts-"))
  dirs.push(dir)
  const source = flakySource(failures)
  const notices: Array<string> = []
  const reporter: ProgressReporterShape = {
    started: () => Effect.void,
    tick: () => Effect.void,
    finished: () => Effect.void,
    notice: (_name, message) => Effect.sync(() => void notices.push(message)),
    intervalMs: 60_000
  }
  const config = {
    source: { type: "flaky" },
    exports: [
      { name: "ids", table: "ids", mode: "chunked", chunk_size: 2, format: "csv", destination: { type: "local", path: "out" }, ...exportKeys }
    ]
  }
  const [outcome] = await Effect.runPromise(
    Effect.flatMap(loadConfig(config as never, { configDir: dir, plugins: [source.plugin as never] }), (loaded) =>
      runConfig(loaded, { retry: { maxRetries: 3, initialDelay: "1 millis", maxDelay: "2 millis" }, state: sqliteStateLayer(":memory:") })
    ).pipe(Effect.provide(Layer.succeed(ProgressReporter, reporter)))
  )
  return { outcome: outcome!, attempts: source.attemptsOf("3"), notices, files: filesUnder(path.join(dir, "out")) }
}

describe("chunk_max_attempts", () => {
  it("a chunk failing more often than allowed fails the run after exactly chunk_max_attempts reads, publishing nothing", async () => {
    const { outcome, attempts, notices, files } = await runChunked(5, { chunk_max_attempts: 2 })
    if (outcome._tag !== "failure") throw new Error("the run succeeded although the chunk failed on every allowed attempt")
    expect(attempts).toBe(2)
    expect(outcome.error.message).toBe("chunk 1 (id 3..4): connection lost (attempt 2)")
    expect(exitCodeOf(outcome.error)).toBe(2)
    expect(notices.filter((notice) => /attempt \d of \d failed, retrying/.test(notice))).toEqual([
      "chunk 1 (id 3..4): attempt 1 of 2 failed, retrying: connection lost (attempt 1)"
    ])
    expect(files.filter((file) => file === "manifest.json" || file === "_SUCCESS")).toEqual([])
  })

  it("a chunk that succeeds within its attempts is kept, once", async () => {
    const { outcome, attempts } = await runChunked(2, { chunk_max_attempts: 3 })
    if (outcome._tag !== "success") throw new Error(`the run failed: ${outcome.error.message}`)
    expect(attempts).toBe(3)
    expect(outcome.result.rows).toBe(4)
    expect(outcome.result.retries).toBe(2)
  })

  it("chunk_max_attempts: 1 does not retry at all", async () => {
    const { outcome, attempts } = await runChunked(1, { chunk_max_attempts: 1 })
    expect(outcome._tag).toBe("failure")
    expect(attempts).toBe(1)
  })

  it("without it, a chunk gets the retry policy's retries + 1 attempts, as before", async () => {
    const failed = await runChunked(10, {})
    expect(failed.outcome._tag).toBe("failure")
    expect(failed.attempts).toBe(4)
    const recovered = await runChunked(3, {})
    expect(recovered.outcome._tag).toBe("success")
    expect(recovered.attempts).toBe(4)
  })
})
