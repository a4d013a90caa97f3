import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as TestClock from "effect/TestClock"
import { loadConfig } from "../../src/api.js"
import type { BatchSchema } from "../../src/core/batch.js"
import { silentProgress } from "../../src/core/progress.js"
import { type ExportRun, runConfig } from "../../src/engine/run.js"
import { sqliteStateLayer } from "../../src/state/sqlite.js"
import { StateStore } from "../../src/state/store.js"
import { memorySource } from "../../src/testing/memory.js"
import { untyped } from "../support/config.js"

const schema: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }] }
const rows = Array.from({ length: 50 }, (_, i) => ({ id: BigInt(i) }))
const PINNED = new Date("2026-12-03T12:00:00.123Z")
const PLAIN_ID = "people_20261203T120000.123"

/** One run of export `people` into its own directory, with the test clock at `PINNED` and state in `stateFile`. */
const runPinned = (stateFile: string) =>
  Effect.gen(function* () {
    yield* TestClock.setTime(PINNED.getTime())
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-run-id-"))
    const source = memorySource({ schema, rows })
    const config = yield* loadConfig(
      untyped({ source: { type: "memory" }, exports: [{ name: "people", table: "people", format: "csv", destination: { type: "local", path: dir } }] }),
      { plugins: [source.plugin as never], configDir: dir }
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
  it.effect("runs started together in the same millisecond, each with its own connection to the state: one runs, the others are refused by the lease", () =>
    Effect.gen(function* () {
      const stateFile = path.join(fs.mkdtempSync(path.join(os.tmpdir(), "rivet-run-id-state-")), "state.db")
      const runs = yield* Effect.all([runPinned(stateFile), runPinned(stateFile), runPinned(stateFile)], { concurrency: 3 })
      // A run that starts after the first one released the lease succeeds too, under a suffixed id.
      const ids = runs.filter((run) => run._tag === "success").map(runIdOf)
      expect(ids).toContain(PLAIN_ID)
      expect(new Set(ids).size).toBe(ids.length)
      for (const run of runs) {
        if (run._tag !== "success") expect(run.error.message).toContain("export 'people' is being run by")
      }
      expect(Option.map(yield* storedRun(stateFile, PLAIN_ID), (run) => run.status)).toEqual(Option.some("success"))
    }))
})
