import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { runExports } from "rivet-export"
import type { LogicalType } from "rivet-export/plugin"
import { memorySink, memorySource } from "rivet-export/testing"
import { afterEach, describe, expect, it } from "vitest"
import { readArrow } from "./read-arrow.js"

const PLUGIN_DIR = path.resolve(import.meta.dirname, "..")

const types = {
  id: { kind: "int64" },
  amount: { kind: "decimal", precision: 10, scale: 2 },
  at: { kind: "timestamptz" },
  note: { kind: "string" }
} satisfies Record<string, LogicalType>
const rows = Array.from({ length: 2500 }, (_, i) => ({
  id: BigInt(i),
  amount: `${i}.${String(i % 100).padStart(2, "0")}`,
  at: 1_700_000_000_000_000n + BigInt(i),
  note: i % 7 === 0 ? null : `note ${i}`
}))
const schema = { columns: Object.entries(types).map(([name, type]) => ({ name, type })) }

const dirs: Array<string> = []
afterEach(() => {
  for (const dir of dirs.splice(0)) fs.rmSync(dir, { recursive: true, force: true })
})

/** Runs one export from memory to memory through Rivet's runtime, loading this package by its directory. */
const run = async (exportKeys: Record<string, unknown>) => {
  const configDir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-arrow-run-"))
  dirs.push(configDir)
  const source = memorySource({ schema, rows })
  const sink = memorySink({ blockSize: 8 * 1024 })
  const [result] = await runExports(
    {
      plugins: [PLUGIN_DIR],
      source: { type: "memory" },
      exports: [{ name: "orders", table: "orders", format: "arrow", batch_size: 500, destination: { type: "memory" }, ...exportKeys }]
    },
    { configDir, plugins: [source.plugin, sink.plugin] }
  )
  return { result: result!, objects: sink.objects() }
}

describe("format: arrow through Rivet's runtime", () => {
  it("publishes one .arrow part, the manifest and _SUCCESS, and the file holds every row", async () => {
    const { result, objects } = await run({})
    expect(result.rows).toBe(rows.length)
    expect(result.parts).toHaveLength(1)
    expect(result.parts[0]!.path).toMatch(/^orders_\d{8}_\d{6}_\d{3}\.arrow$/)
    expect(result.manifest?.format).toBe("arrow")
    expect([...objects.keys()].sort()).toEqual(
      [result.parts[0]!.path, "_SUCCESS", `_manifests/${result.runId}.json`, "manifest.json"].sort()
    )
    const { table, columns } = readArrow(objects.get(result.parts[0]!.path)!, types)
    expect(table.batches).toHaveLength(5)
    for (const name of Object.keys(types)) {
      expect(columns[name], name).toEqual(rows.map((row) => row[name as keyof typeof row]))
    }
  })

  it("with max_file_size, every part is a complete Arrow file and together they hold the rows in order", async () => {
    const { result, objects } = await run({ max_file_size: "20KB" })
    expect(result.parts.length).toBeGreaterThan(1)
    const ids = result.parts.flatMap((part) => {
      const { table, columns } = readArrow(objects.get(part.path)!, types)
      expect(table.numRows).toBe(part.rows)
      return columns["id"]!
    })
    expect(ids).toEqual(rows.map((row) => row.id))
  })

  it("rejects a key the format does not know, like a built-in format", async () => {
    await expect(run({ compression: "zstd" })).rejects.toMatchObject({
      _tag: "ConfigError",
      path: "exports[0].compression",
      message: "unknown key 'compression'"
    })
  })
})
