import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { runExportsEffect } from "../../src/api.js"
import type { BatchSchema } from "../../src/core/batch.js"
import { SinkError } from "../../src/core/errors.js"
import type { Manifest } from "../../src/core/manifest.js"
import { memorySink, memorySource } from "../../src/testing/memory.js"
import { untyped } from "../support/config.js"

const schema: BatchSchema = {
  columns: [
    { name: "id", type: { kind: "int64" } },
    { name: "name", type: { kind: "string" } }
  ]
}
const rows = Array.from({ length: 1000 }, (_, i) => ({ id: BigInt(i), name: `row ${i}, "quoted"` }))
const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
const tempDir = () => fs.mkdtempSync(path.join(os.tmpdir(), "rivet-pipeline-"))

const config = (dir: string, exportPatch: Record<string, unknown> = {}) => untyped({
  source: { type: "memory" },
  exports: [
    {
      name: "people",
      table: "people",
      format: "csv",
      batch_size: 100,
      destination: { type: "local", path: dir },
      ...exportPatch
    }
  ]
})

describe("pipeline: source → format → local sink", () => {
  it.effect("writes one part, a manifest that describes it exactly, and _SUCCESS", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const source = memorySource({ schema, rows })
      const [run] = yield* runExportsEffect(config(dir), { plugins: [source.plugin as never], configDir: tempDir() })
      expect(run?._tag).toBe("success")
      const files = fs.readdirSync(dir).sort()
      expect(files).toHaveLength(4)
      const part = files.find((f) => f.endsWith(".csv"))!
      expect(part).toMatch(/^people_\d{8}_\d{6}_\d{3}\.csv$/)
      const manifestBytes = fs.readFileSync(path.join(dir, "manifest.json"))
      const manifest = JSON.parse(manifestBytes.toString("utf8")) as Manifest
      const partBytes = fs.readFileSync(path.join(dir, part))
      expect(manifest).toMatchObject({
        manifest_version: 1,
        export_name: "people",
        status: "success",
        format: "csv",
        row_count: 1000,
        part_count: 1,
        schema: [
          { name: "id", type: "int64" },
          { name: "name", type: "string" }
        ],
        destination: { type: "local", uri: expect.stringMatching(/^file:\/\//) },
        parts: [{ path: part, rows: 1000, size_bytes: partBytes.length, content_fingerprint: sha256(partBytes) }]
      })
      expect(manifest.run_id).toMatch(/^people_\d{8}T\d{6}\.\d{3}$/)
      expect(fs.readFileSync(path.join(dir, "_SUCCESS"), "utf8")).toBe(`${sha256(manifestBytes)}\n`)
      // The run's manifest is kept under _manifests/, byte for byte.
      expect(fs.readdirSync(path.join(dir, "_manifests"))).toEqual([`${manifest.run_id}.json`])
      expect(fs.readFileSync(path.join(dir, "_manifests", `${manifest.run_id}.json`))).toEqual(manifestBytes)
      expect(partBytes.toString("utf8").split("\n")).toHaveLength(1002)
    }))

  it.effect("splits into _part{N} files of at most max_file_size whose rows add up when it is set", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      // About 270 KiB of CSV: more than four parts of the smallest cap.
      const many = Array.from({ length: 10_000 }, (_, i) => ({ id: BigInt(i), name: `row ${i}, "quoted"` }))
      const source = memorySource({ schema, rows: many })
      yield* runExportsEffect(config(dir, { max_file_size: "64KiB" }), { plugins: [source.plugin as never], configDir: tempDir() })
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as Manifest
      expect(manifest.part_count).toBeGreaterThan(3)
      manifest.parts.forEach((part, index) => {
        expect(part.path).toMatch(new RegExp(`^people_\\d{8}_\\d{6}_\\d{3}_part${index}\\.csv$`))
        const bytes = fs.readFileSync(path.join(dir, part.path))
        expect(part.size_bytes).toBe(bytes.length)
        expect(bytes.length).toBeLessThanOrEqual(64 * 1024)
        expect(part.content_fingerprint).toBe(sha256(bytes))
      })
      expect(manifest.parts.reduce((sum, part) => sum + part.rows, 0)).toBe(10_000)
      expect(manifest.row_count).toBe(10_000)
    }))

  it.effect("a source failing mid-stream leaves no data file, no temp file and no markers", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const source = memorySource({ schema, rows }, { failAfterBatches: 4 })
      const [run] = yield* runExportsEffect(config(dir), { plugins: [source.plugin as never], configDir: tempDir() })
      expect(run?._tag).toBe("failure")
      expect(fs.readdirSync(dir)).toEqual([])
    }))

  it.effect("an export with no rows writes no data file and a manifest with zero parts", () =>
    Effect.gen(function* () {
      const dir = tempDir()
      const source = memorySource({ schema, rows: [] })
      yield* runExportsEffect(config(dir), { plugins: [source.plugin as never], configDir: tempDir() })
      expect(fs.readdirSync(dir).sort()).toEqual(["_SUCCESS", "_manifests", "manifest.json"])
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as Manifest
      expect(manifest).toMatchObject({ row_count: 0, part_count: 0, parts: [] })
    }))

  it.effect("a sink that cannot commit aborts the part and publishes no markers", () =>
    Effect.gen(function* () {
      const source = memorySource({ schema, rows })
      const sink = memorySink({ type: "flaky", blockSize: 1024, failWith: (call) =>
        call.operation === "complete"
          ? new SinkError({ plugin: "flaky", operation: "complete", reason: "PermissionDenied", message: "denied", retryable: false })
          : undefined
      })
      const [run] = yield* runExportsEffect(
        untyped({ ...config("/unused"), exports: [{ ...config("/unused").exports[0], destination: { type: "flaky" } }] }),
        { plugins: [source.plugin as never, sink.plugin as never] }
      )
      expect(run?._tag).toBe("failure")
      expect([...sink.objects().keys()]).toEqual([])
      expect(sink.pendingUploads()).toBe(0)
      expect(sink.calls().some((call) => call.operation === "abort")).toBe(true)
    }))
})
