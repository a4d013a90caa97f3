import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { exportRecentOrders } from "../../examples/export-from-code.js"
import { ConfigError, runExports } from "../../src/index.js"
import { testPgUrl } from "../support/pg.js"

describe("library API (docs/api.md)", () => {
  beforeAll(async () => {
    const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
    await sql.unsafe(`
      DROP TABLE IF EXISTS orders;
      CREATE TABLE orders (id int8 PRIMARY KEY, ordered_at timestamptz NOT NULL, total numeric(10,2));
      INSERT INTO orders SELECT i, now() - i * interval '1 day', i * 1.25 FROM generate_series(1, 100) AS i;
    `)
    await sql.end()
  })
  afterAll(async () => {
    const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
    await sql.unsafe("DROP TABLE IF EXISTS orders")
    await sql.end()
  })

  it("the example in examples/export-from-code.ts runs and reports what landed", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-api-"))
    const result = await exportRecentOrders(testPgUrl(), dir)
    expect(result.rows).toBe(29)
    expect(result.parts).toHaveLength(1)
    expect(result.manifest?.row_count).toBe(29)
    expect(fs.existsSync(path.join(dir, result.parts[0]!.path))).toBe(true)
    expect(fs.existsSync(path.join(dir, "_SUCCESS"))).toBe(true)
  })

  it("rejects an invalid config with the tagged ConfigError naming the path", async () => {
    const error = await runExports({ source: { type: "postgres", url: testPgUrl() }, exports: [{ name: "x", table: "orders", destination: { type: "local" } }] }).catch(
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).path).toBe("exports[0].destination.path")
  })
})
