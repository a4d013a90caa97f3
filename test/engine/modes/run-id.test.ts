import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import * as TestClock from "effect/TestClock"
import { loadConfig } from "../../../src/api.js"
import { type BatchSchema, makeBatch } from "../../../src/core/batch.js"
import type { SourcePlugin } from "../../../src/core/plugin.js"
import { silentProgress } from "../../../src/core/progress.js"
import { type ExportRun, runConfig } from "../../../src/engine/run.js"
import { sqliteStateLayer } from "../../../src/state/sqlite.js"
import { StateStore } from "../../../src/state/store.js"
import { memorySource } from "../../../src/testing/memory.js"
import { untyped } from "../../support/config.js"
import { idSchema, idSource } from "../../support/id-source.js"

const schema: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }] }
const rows = Array.from({ length: 50 }, (_, i) => ({ id: BigInt(i) }))
const PINNED = new Date("2026-12-03T12:00:00.123Z")
const PLAIN_ID = "people_20261203T120000.123"

/**
 * One run of export `people` into its own directory, with the test clock at `PINNED` and state in `stateFile`,
 * reading `plugin` (by default an in-memory table of 50 rows).
 */
const runPinned = (stateFile: string, plugin: SourcePlugin = memorySource({ schema, rows }).plugin as never) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(PINNED.getTime())
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-run-id-"))
    const config = yield* loadConfig(
      untyped({ source: { type: plugin.type }, exports: [{ name: "people", table: "people", format: "csv", destination: { type: "local", path: dir } }] }),
      { plugins: [plugin as never], configDir: dir }
    )
    const [run] = yield* runConfig(config, { state: sqliteStateLayer(stateFile) }).pipe(
      Effect.provide(silentProgress)
    )
    return run!
  })

const runIdOf = (run: ExportRun): string => {
  if (run._tag !== "success") throw new Error(`the run failed: ${run.error.message}`)
  return run.result.runId
}

const storedRun = (stateFile: string, runId: string) =>
  Effect.flatMap(StateStore, (state) => state.run(runId)).pipe(Effect.provide(sqliteStateLayer(stateFile)))

describe("run ids", () => {
  it.effect("a second run started in the same millisecond gets the documented id plus a short suffix, and both succeed", () =>
    Effect.gen(function* () {
      const stateFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rivet-run-id-state-")), "state.db")
      const first = runIdOf(yield* runPinned(stateFile))
      const second = runIdOf(yield* runPinned(stateFile))
      expect(first).toBe(PLAIN_ID)
      expect(second).toMatch(new RegExp(`^${PLAIN_ID.replace(".", "\\.")}-[0-9a-f]{4}$`))
      expect(Option.map(yield* storedRun(stateFile, first), (run) => run.status)).toEqual(Option.some("success"))
      expect(Option.map(yield* storedRun(stateFile, second), (run) => run.status)).toEqual(Option.some("success"))
    }))

  // Concurrent runs of one export meet at its lease: one runs, the others are refused naming it (not a run-id clash).
  // The first run to read its source is held there until the other two have ended, so all three overlap whatever
  // the scheduling; without the lease the other two would read and succeed too.
  it.effect("runs started together in the same millisecond, each with its own connection to the state: one runs, the others are refused by the lease", () =>
    Effect.gen(function* () {
      const stateFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rivet-run-id-state-")), "state.db")
      const release = yield* Deferred.make<void>()
      let reads = 0
      let ended = 0
      const source = idSource("gated", 50, () =>
        Effect.gen(function* () {
          if (++reads === 1) yield* Deferred.await(release)
          return { schema: idSchema, batches: Stream.make(makeBatch(idSchema, [Array.from({ length: 50 }, (_, i) => BigInt(i + 1))])) }
        })
      )
      const counted = runPinned(stateFile, source as never).pipe(
        Effect.ensuring(Effect.suspend(() => (++ended === 2 ? Deferred.succeed(release, undefined) : Effect.void)))
      )
      const runs = yield* Effect.all([counted, counted, counted], { concurrency: 3 })
      const succeeded = runs.filter((run) => run._tag === "success")
      expect(succeeded.map(runIdOf)).toEqual([PLAIN_ID])
      const refused = runs.flatMap((run) => (run._tag === "failure" ? [run.error.message] : []))
      expect(refused).toHaveLength(2)
      for (const message of refused) {
        // The holder may be refused before it journaled its run id: then it is named by its process.
        expect(message).toMatch(
          new RegExp(`^export 'people' is being run by (run '${PLAIN_ID.replace(".", "\\.")}'|a run not journaled yet) \\(pid ${process.pid} on `)
        )
      }
      expect(reads).toBe(1)
      expect(Option.map(yield* storedRun(stateFile, PLAIN_ID), (run) => run.status)).toEqual(Option.some("success"))
    }))
})
