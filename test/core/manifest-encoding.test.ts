import { describe, expect, it } from "@effect/vitest"
import { encodeManifest, type Manifest, type PartRecord } from "../../src/core/manifest.js"

const base: Manifest = {
  manifest_version: 1,
  run_id: "20261205T170000Z-abc",
  export_name: "orders \"quoted\" é",
  started_at: "2026-12-05T17:00:00.000Z",
  finished_at: "2026-12-05T17:00:01.000Z",
  status: "success",
  source: { type: "postgres", query: "select 1 -- \"parts\": [] \u0000parts\u0000\nnext line", mode: "full" },
  destination: { type: "local", uri: "file:///tmp/out" },
  format: "csv",
  compression: "none",
  schema: [{ name: "k", type: "string" }],
  schema_fingerprint: "sha256:00",
  row_count: 3,
  part_count: 0,
  parts: []
}

const part = (i: number, partition?: Record<string, string | null>): PartRecord => ({
  path: `k=v${i}/orders_part${i}.csv`,
  rows: i,
  size_bytes: i * 10,
  content_fingerprint: `sha256:${"ab".repeat(32)}`,
  ...(partition ? { partition } : {})
})

const expected = (manifest: Manifest) => new TextEncoder().encode(`${JSON.stringify(manifest, null, 2)}\n`)

describe("manifest.json bytes", () => {
  it("are JSON.stringify(manifest, null, 2) and a newline, byte for byte, however many parts it lists", () => {
    const partitions = [{ k: "a/b" }, { k: null }, { k: "日本", "at_month": "2024-05" }, { k: "line\nbreak \"q\" \\ \u2028" }]
    const manifests: Array<Manifest> = [
      base,
      { ...base, parts: [part(1)], part_count: 1 },
      { ...base, parts: Array.from({ length: 5000 }, (_, i) => part(i, partitions[i % partitions.length])), part_count: 5000 },
      { ...base, source: { type: "postgres", table: "t", mode: "incremental", cursor: { column: "id", value: "9" } }, parts: [part(2, {})] }
    ]
    for (const manifest of manifests) expect(Buffer.from(encodeManifest(manifest)).equals(Buffer.from(expected(manifest)))).toBe(true)
  })
})
