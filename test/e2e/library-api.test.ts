import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { exportRecentOrders } from "../../examples/export-from-code.js"
import * as Effect from "effect/Effect"
import { ConfigError, runExports, sqliteStateLayer, StateError, StateStore } from "../../src/index.js"
import { testPgUrl } from "../support/pg.js"
import { untyped } from "../support/config.js"

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

  it("an export another process holds fails with a StateError naming it; `wait` waits for it to be released", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-api-lease-"))
    const stateFile = path.join(dir, "state.db")
    const config = untyped({ source: { type: "postgres", url: testPgUrl() }, exports: [{ name: "leased", table: "orders", destination: { type: "local", path: path.join(dir, "out") } }] })
    const holder = { key: "leased", exportName: "leased", token: "other-process", pid: 4242, host: "elsewhere.example", ttlMs: 60_000 }
    const withState = <A>(effect: Effect.Effect<A, StateError, StateStore>) => Effect.runPromise(Effect.provide(effect, sqliteStateLayer(stateFile)))
    await withState(Effect.flatMap(StateStore, (store) => store.acquireLease(holder)))
    try {
      const refused = await runExports(config, { state: sqliteStateLayer(stateFile) }).catch((e: unknown) => e)
      expect(refused).toBeInstanceOf(StateError)
      expect((refused as StateError).message).toContain("export 'leased' is being run by a run not journaled yet (pid 4242 on elsewhere.example)")
      expect((refused as StateError).retryable).toBe(true)
      const badWait = await runExports(config, { state: sqliteStateLayer(stateFile), wait: "soon" }).catch((e: unknown) => e)
      expect(badWait).toBeInstanceOf(ConfigError)

      const release = setTimeout(() => void withState(Effect.flatMap(StateStore, (store) => store.releaseLease(holder))), 1_500)
      const started = Date.now()
      const [result] = await runExports(config, { state: sqliteStateLayer(stateFile), wait: "20s" }).finally(() => clearTimeout(release))
      expect(Date.now() - started).toBeGreaterThanOrEqual(1_400)
      expect(result?.rows).toBe(100)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("rejects an invalid config with the tagged ConfigError naming the path", async () => {
    const error = await runExports(untyped({ source: { type: "postgres", url: testPgUrl() }, exports: [{ name: "x", table: "orders", destination: { type: "local" } }] })).catch(
      (e: unknown) => e
    )
    expect(error).toBeInstanceOf(ConfigError)
    expect((error as ConfigError).path).toBe("exports[0].destination.path")
  })
})
