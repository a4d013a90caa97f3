import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { parquetMetadata } from "hyparquet"
import { describe, expect, it } from "vitest"
import type { Manifest } from "../../src/core/manifest.js"
import { DEMO_ROW_COUNTS } from "../../src/embedded-postgres/demo-seed.js"
import { readRows } from "../plugins/formats/parquet/read-back.js"
import { runCliInTerminal, screenLines } from "../support/cli.js"

const QUICKSTART = path.resolve(import.meta.dirname, "../../examples/quickstart.yaml")

describe("README quickstart", () => {
  it("exports the embedded demo database to valid Parquet in ./output/, on a terminal: labelled start-up steps, one summary table", async () => {
    // Same layout as the repository (examples/quickstart.yaml → ../output), in a scratch directory.
    const root = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-quickstart-"))
    fs.chmodSync(root, 0o755) // as root, the embedded server runs as the postgres user, who must reach it
    fs.mkdirSync(path.join(root, "examples"))
    fs.copyFileSync(QUICKSTART, path.join(root, "examples", "quickstart.yaml"))
    try {
      // As the README's first command runs: in a terminal.
      const result = await runCliInTerminal(["run", "-c", "examples/quickstart.yaml"], { cwd: root })
      expect(result.output).not.toContain("Error:")
      expect(result.code).toBe(0)
      // initdb and the seed take seconds: the user sees what is happening (the server's start is never this fast).
      expect(result.output).toContain("starting the embedded PostgreSQL…")
      const screen = screenLines(result.output)
      const header = screen.findIndex((line) => line.startsWith("EXPORT "))
      expect(screen.slice(header + 1, header + 7).map((line) => [...line.split(/\s+/).slice(0, 2), line.split(/\s+/).at(-1)].join(" "))).toEqual(
        ["customers", "products", "orders", "order_items", "events", "revenue_by_country"].map((name) => `${name} success output/${name}`)
      )
      expect(screen[header + 7]).toMatch(/^6 exports done in [\d.]+s: 82,628 rows, /)
      expect(result.output).not.toContain("── customers")
      const output = path.join(root, "output")
      for (const [table, rows] of Object.entries(DEMO_ROW_COUNTS)) {
        const dir = path.join(output, table)
        const manifest = JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as Manifest
        expect(manifest.row_count, table).toBe(rows)
        expect(fs.existsSync(path.join(dir, "_SUCCESS"))).toBe(true)
        for (const part of manifest.parts) {
          const bytes = fs.readFileSync(path.join(dir, part.path))
          const file = bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength)
          expect(Number(parquetMetadata(file).num_rows)).toBe(part.rows)
        }
      }
      const customers = JSON.parse(fs.readFileSync(path.join(output, "customers", "manifest.json"), "utf8")) as Manifest
      const bytes = fs.readFileSync(path.join(output, "customers", customers.parts[0]!.path))
      const rows = await readRows(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))
      expect(rows).toHaveLength(DEMO_ROW_COUNTS.customers)
      const revenue = JSON.parse(fs.readFileSync(path.join(output, "revenue_by_country", "manifest.json"), "utf8")) as Manifest
      expect(revenue.schema).toContainEqual({ name: "revenue", type: "decimal(14,2)" })
    } finally {
      fs.rmSync(root, { recursive: true, force: true })
    }
  }, 180_000)
})
