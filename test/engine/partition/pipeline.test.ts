import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { runExportsEffect } from "../../../src/api.js"
import type { BatchSchema } from "../../../src/core/batch.js"
import type { Manifest } from "../../../src/core/manifest.js"
import { memorySource } from "../../../src/testing/memory.js"
import { untyped } from "../../support/config.js"

const schema: BatchSchema = {
  columns: [
    { name: "id", type: { kind: "int64" } },
    { name: "team", type: { kind: "string" } }
  ]
}
const TEAMS = ["red", "blue", "x=y", ""]
// About 140 KiB of NDJSON per team (`{"id":"…"}` lines): at least two parts of the smallest cap in each partition.
const rows = Array.from({ length: 40_000 }, (_, i) => ({ id: BigInt(i), team: TEAMS[i % 4]! }))

describe("partitioned parts in process", () => {
  it.effect("max_file_size rotates each partition's parts; the manifest's parts hold every row once", () =>
    Effect.gen(function* () {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-partition-pipeline-"))
      const source = memorySource({ schema, rows })
      const config = untyped({
        source: { type: "memory" },
        exports: [
          { name: "teams", table: "teams", format: "ndjson", batch_size: 500, max_file_size: "64KiB", partition_by: ["team"], max_open_partitions: 2, destination: { type: "local", path: dir } }
        ]
      })
      const [run] = yield* runExportsEffect(config, { plugins: [source.plugin as never], configDir: dir })
      expect(run?._tag).toBe("success")
      const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as Manifest
      const ids: Array<number> = []
      for (const part of manifest.parts) {
        expect(part.size_bytes).toBeLessThanOrEqual(64 * 1024)
        const lines = fs.readFileSync(path.join(dir, part.path), "utf8").trim().split("\n")
        expect(lines).toHaveLength(part.rows)
        for (const line of lines) {
          const row = JSON.parse(line) as { id: string; team?: string }
          const id = Number(row.id)
          // The partition column is not in the files; the directory says which team the row belongs to.
          expect(row.team).toBeUndefined()
          expect(part.partition).toEqual({ team: TEAMS[id % 4] || null })
          ids.push(id)
        }
      }
      expect(ids.sort((a, b) => a - b)).toEqual(rows.map((_, i) => i))
      const perPartition = new Map<string, number>()
      for (const part of manifest.parts) perPartition.set(path.dirname(part.path), (perPartition.get(path.dirname(part.path)) ?? 0) + 1)
      expect([...perPartition.keys()].sort()).toEqual(["team=__HIVE_DEFAULT_PARTITION__", "team=blue", "team=red", "team=x%3Dy"])
      for (const count of perPartition.values()) expect(count).toBeGreaterThan(1)
      expect(new Set(manifest.parts.map((part) => part.path)).size).toBe(manifest.parts.length)
      fs.rmSync(dir, { recursive: true, force: true })
    }))
})
