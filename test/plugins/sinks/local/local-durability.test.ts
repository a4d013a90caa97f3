import { mkdtempSync, rmSync, statSync } from "node:fs"
import { tmpdir } from "node:os"
import { basename, dirname, join } from "node:path"
import { afterAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { loadConfig } from "../../../../src/api.js"
import type { BatchSchema } from "../../../../src/core/batch.js"
import { SinkDriver } from "../../../../src/core/plugin.js"
import { silentProgress } from "../../../../src/core/progress.js"
import { runConfig } from "../../../../src/engine/run.js"
import { LocalFileSystem, type LocalFileSystemShape, nodeLocalFileSystem } from "../../../../src/plugins/sinks/local/file-system.js"
import localSink from "../../../../src/plugins/sinks/local/index.js"
import { stateLayerFor } from "../../../../src/state/layer.js"
import { memorySource } from "../../../../src/testing/memory.js"
import { untyped } from "../../../support/config.js"

// The local sink's durability order, observed through a recording file system around the real one: a file's data
// is flushed (fsync) before it is renamed into place, and its directory is flushed after the rename. Swapping the
// first two would let a crash leave a named file with missing data; every other test still passes then, since
// nothing crashes in them.

const base = mkdtempSync(join(tmpdir(), "rivet-local-durability-"))
afterAll(() => rmSync(base, { recursive: true, force: true }))

interface Step {
  readonly op: "sync" | "rename"
  readonly phase: "start" | "end"
  readonly path: string
  readonly to?: string
  /** For a file's fsync: its size on disk when flushed. */
  readonly size?: number
}

/** Node's file system, recording when each sync and rename starts and ends. */
const recordingFileSystem = () => {
  const steps: Array<Step> = []
  const files: LocalFileSystemShape = {
    sync: async (handle, path) => {
      const info = await handle.stat()
      const size = info.isFile() ? info.size : undefined
      steps.push({ op: "sync", phase: "start", path, ...(size === undefined ? {} : { size }) })
      await nodeLocalFileSystem.sync(handle, path)
      steps.push({ op: "sync", phase: "end", path })
    },
    rename: async (from, to) => {
      steps.push({ op: "rename", phase: "start", path: from, to })
      await nodeLocalFileSystem.rename(from, to)
      steps.push({ op: "rename", phase: "end", path: from, to })
    }
  }
  return { files, steps }
}

/**
 * Checks the order for the object committed at `target`: its temp file was flushed, at its final size, before the
 * rename started, and the directory was flushed after the rename ended.
 */
const expectDurableOrder = (steps: ReadonlyArray<Step>, target: string) => {
  const at = (predicate: (step: Step) => boolean) => steps.findIndex(predicate)
  const renameStart = at((step) => step.op === "rename" && step.phase === "start" && step.to === target)
  expect(renameStart, `no rename onto ${target}`).toBeGreaterThanOrEqual(0)
  const temp = steps[renameStart]!.path
  expect(dirname(temp)).toBe(dirname(target))
  expect(basename(temp)).toMatch(/^\..+\.tmp-/)
  const fileSyncStart = at((step) => step.op === "sync" && step.phase === "start" && step.path === temp)
  const fileSyncEnd = at((step) => step.op === "sync" && step.phase === "end" && step.path === temp)
  expect(fileSyncStart, `the temp file of ${target} was never flushed`).toBeGreaterThanOrEqual(0)
  expect(fileSyncEnd, `the temp file of ${target} was renamed before its flush ended`).toBeLessThan(renameStart)
  expect(steps[fileSyncStart]!.size).toBe(statSync(target).size)
  const renameEnd = at((step) => step.op === "rename" && step.phase === "end" && step.to === target)
  const directorySync = steps.findIndex(
    (step, index) => index > renameEnd && step.op === "sync" && step.phase === "start" && step.path === dirname(target)
  )
  expect(directorySync, `the directory of ${target} was not flushed after the rename`).toBeGreaterThan(renameEnd)
}

const encode = (text: string) => new TextEncoder().encode(text)

describe("local sink durability order", () => {
  it.effect("put and a block upload: fsync of the data, then the rename, then fsync of the directory", () =>
    Effect.gen(function* () {
      const { files, steps } = recordingFileSystem()
      const root = join(base, "sink")
      yield* Effect.gen(function* () {
        const sink = yield* SinkDriver
        yield* sink.put("small.json", encode('{"a":1}'), "application/json")
        const upload = yield* sink.begin("nested/deeper/part-0.csv", "text/csv")
        yield* upload.writeBlock(0, encode("id\n1\n2\n3\n"))
        yield* upload.complete(1)
      }).pipe(
        Effect.provide(localSink.make({ path: root }, { configDir: base, env: {} })),
        Effect.provideService(LocalFileSystem, files)
      )
      expectDurableOrder(steps, join(root, "small.json"))
      expectDurableOrder(steps, join(root, "nested", "deeper", "part-0.csv"))
    })
  )

  it.effect("a whole run: every part, the manifest and _SUCCESS are flushed before they are renamed into place", () =>
    Effect.gen(function* () {
      const { files, steps } = recordingFileSystem()
      const dir = mkdtempSync(join(base, "run-"))
      const schema: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }] }
      const source = memorySource({ schema, rows: Array.from({ length: 30_000 }, (_, i) => ({ id: BigInt(i) })) })
      const config = yield* loadConfig(
        untyped({
          source: { type: "memory" },
          exports: [{ name: "ids", table: "ids", format: "csv", batch_size: 500, max_file_size: "64KiB", destination: { type: "local", path: "out" } }]
        }),
        { plugins: [source.plugin as never], configDir: dir }
      )
      // The state the CLI would pick: SQLite beside the config, or RIVET_STATE_URL (the Node 22 run keeps state in
      // PostgreSQL, as its better-sqlite3 is built for the main suite's Node).
      const [run] = yield* runConfig(config, { state: stateLayerFor({ configDir: dir, env: process.env }) }).pipe(
        Effect.provide(silentProgress),
        Effect.provideService(LocalFileSystem, files)
      )
      if (run?._tag !== "success") throw new Error(`the run failed: ${run?.error.message}`)
      expect(run.result.parts.length).toBeGreaterThan(1)
      const out = join(dir, "out")
      for (const part of run.result.parts) expectDurableOrder(steps, join(out, part.path))
      expectDurableOrder(steps, join(out, "manifest.json"))
      expectDurableOrder(steps, join(out, "_SUCCESS"))
    })
  )
})
