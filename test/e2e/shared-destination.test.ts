import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Manifest } from "../../src/core/manifest.js"
import { runCli, writeConfig } from "../support/cli.js"
import { filesUnder } from "../support/output.js"
import { testPgUrl } from "../support/pg.js"
import type { S3TestServer } from "../support/s3/server.js"
import { isolateAwsEnv, s3Destination, serverEnv, startWithBucket } from "./s3-support.js"

// Two exports writing into one directory (local) or prefix (S3): each has its own manifest and marker, runs,
// validates and resumes on its own. `orders_items` starts with `orders_` on purpose: its parts must never be taken
// for parts of `orders`.

const BUCKET = "rivet-e2e-shared"
const ORDERS = "shared_orders"
const ITEMS = "shared_items"

let sql: postgres.Sql
let server: S3TestServer
let s3Env: Record<string, string>
const dirs: Array<string> = []

beforeAll(async () => {
  isolateAwsEnv()
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS ${ORDERS}, ${ITEMS};
    CREATE TABLE ${ORDERS} (id int PRIMARY KEY, broken boolean NOT NULL DEFAULT false);
    CREATE TABLE ${ITEMS} (id int PRIMARY KEY, sku text NOT NULL)`)
  server = await startWithBucket(BUCKET)
  s3Env = serverEnv(server)
}, 60_000)

afterAll(async () => {
  await sql.unsafe(`DROP TABLE IF EXISTS ${ORDERS}, ${ITEMS}`)
  await sql.end()
  await server?.stop()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`
const findingLines = (stdout: string) => stdout.split("\n").filter((line) => /^(FAIL|WARN) /.test(line))

/** Where the exports write, and how the test reads what is there (keys relative to the directory or prefix). */
interface Place {
  readonly destination: (configDir: string) => Record<string, unknown>
  readonly env: () => Record<string, string>
  readonly keys: (configDir: string) => Promise<ReadonlyArray<string>>
  readonly read: (configDir: string, key: string) => Promise<Uint8Array>
}

const local: Place = {
  destination: () => ({ type: "local", path: "out" }),
  env: () => ({}),
  keys: async (configDir) => filesUnder(path.join(configDir, "out")).filter((key) => !path.basename(key).startsWith(".")),
  read: async (configDir, key) => fs.readFileSync(path.join(configDir, "out", key))
}

const prefixOf = (configDir: string) => `shared/${path.basename(configDir)}/`
const s3: Place = {
  destination: (configDir) => s3Destination(server, BUCKET, { prefix: prefixOf(configDir) }),
  env: () => s3Env,
  keys: async (configDir) =>
    (await server.listObjects(BUCKET, prefixOf(configDir))).map((object) => object.key.slice(prefixOf(configDir).length)).sort(),
  read: (configDir, key) => server.getObject(BUCKET, `${prefixOf(configDir)}${key}`)
}

describe.each([
  ["local directory", local],
  ["S3 prefix", s3]
])("two exports in one %s", (_label, place) => {
  it("run, validate and resume independently, each with its own manifest and marker", async () => {
    await sql.unsafe(`TRUNCATE ${ORDERS}, ${ITEMS};
      INSERT INTO ${ORDERS} SELECT i, i = 250 FROM generate_series(1, 1000) AS i;
      INSERT INTO ${ITEMS} SELECT i, 'sku' || i FROM generate_series(1, 300) AS i`)
    const config = writeConfig("")
    const dir = path.dirname(config)
    dirs.push(dir)
    const destination = place.destination(dir)
    fs.writeFileSync(
      config,
      JSON.stringify({
        source: { type: "postgres", url: testPgUrl() },
        exports: [
          {
            name: "orders",
            query: `SELECT id, 1 / (CASE WHEN broken THEN 0 ELSE 1 END) AS ok FROM ${ORDERS}`,
            mode: "chunked",
            chunk_column: "id",
            chunk_size: 100,
            chunk_checkpoint: true,
            format: "csv",
            destination
          },
          { name: "orders_items", table: ITEMS, mode: "incremental", cursor_column: "id", format: "csv", destination }
        ]
      })
    )
    const cli = (...args: Array<string>) => runCli([...args, "-c", config], { env: place.env() })
    const keys = () => place.keys(dir)
    const manifestOf = async (name: string): Promise<Manifest> =>
      JSON.parse(new TextDecoder().decode(await place.read(dir, `${name}.manifest.json`))) as Manifest
    /** `_SUCCESS.{export}` vouches for `{export}.manifest.json`, whose kept copy is the same bytes. */
    const expectPublished = async (name: string) => {
      const bytes = await place.read(dir, `${name}.manifest.json`)
      expect(new TextDecoder().decode(await place.read(dir, `_SUCCESS.${name}`))).toBe(`${sha256(bytes)}\n`)
      const manifest = await manifestOf(name)
      expect(await place.read(dir, `_manifests/${manifest.run_id}.json`)).toEqual(bytes)
      return manifest
    }

    // orders fails at chunk 2 (a division by zero), orders_items publishes.
    const first = await cli("run")
    expect(first.code, first.stderr).toBe(1)
    expect(first.stderr).toMatch(/chunk 2 \(id 201\.\.300\)/)
    const items1 = await expectPublished("orders_items")
    expect(items1.row_count).toBe(300)
    const afterFailure = await keys()
    expect(afterFailure).not.toContain("manifest.json")
    expect(afterFailure).not.toContain("_SUCCESS")
    expect(afterFailure).not.toContain("orders.manifest.json")
    const ordersParts = afterFailure.filter((key) => /^orders_\d{8}_\d{6}_chunk\d+_[0-9a-f]{16}\.csv$/.test(key))
    expect(ordersParts).toHaveLength(2)

    const failedValidation = await cli("validate")
    expect(failedValidation.code).toBe(3)
    expect(findingLines(failedValidation.stdout)).toEqual([
      expect.stringMatching(/^FAIL orders: MANIFEST_MISSING orders\.manifest\.json: not found at /)
    ])
    expect(failedValidation.stdout).toContain("OK   orders_items: 1 part, 300 rows verified\n")

    // orders' unfinished run is its own: a plain run of it is refused, orders_items runs on regardless.
    await sql.unsafe(`INSERT INTO ${ITEMS} SELECT i, 'sku' || i FROM generate_series(301, 320) AS i`)
    const refused = await cli("run", "-e", "orders")
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/checkpointed run 'orders_\d{8}T\d{6}\.\d{3}' did not finish/)
    const second = await cli("run", "-e", "orders_items")
    expect(second.code, second.stderr).toBe(0)
    expect((await expectPublished("orders_items")).row_count).toBe(20)

    await sql.unsafe(`UPDATE ${ORDERS} SET broken = false`)
    const resumed = await cli("run", "--resume", "-e", "orders")
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stderr).toContain("resuming run 'orders_")
    const orders = await expectPublished("orders")
    expect(orders.row_count).toBe(1000)
    for (const part of ordersParts) expect(orders.parts.map((listed) => listed.path)).toContain(part)

    const clean = await cli("validate", "--strict")
    expect(clean.stderr).toBe("")
    expect(clean.code).toBe(0)
    expect(findingLines(clean.stdout)).toEqual([])
    expect(clean.stdout).toContain(`OK   orders: ${orders.parts.length} parts, 1,000 rows verified\n`)
    expect(clean.stdout).toContain("OK   orders_items: 2 runs, 2 parts, 320 rows verified\n")

    // Nothing at the destination but the two exports' parts and their own markers.
    const items = (await keys()).filter((key) => key.startsWith("orders_items_"))
    expect(await keys()).toEqual(
      [
        ...orders.parts.map((part) => part.path),
        ...items,
        "_SUCCESS.orders",
        "_SUCCESS.orders_items",
        `_manifests/${orders.run_id}.json`,
        `_manifests/${items1.run_id}.json`,
        `_manifests/${(await manifestOf("orders_items")).run_id}.json`,
        "orders.manifest.json",
        "orders_items.manifest.json"
      ].sort()
    )
    expect(items).toHaveLength(2)
  }, 180_000)
})

describe("a config changing who shares a destination", () => {
  it("an export joined by another keeps validating; its manifest.json from before is reported as stale", async () => {
    await sql.unsafe(`TRUNCATE ${ITEMS}; INSERT INTO ${ITEMS} SELECT i, 'sku' || i FROM generate_series(1, 10) AS i`)
    const alone = `source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: items, table: ${ITEMS}, format: csv, destination: { type: local, path: out } }
`
    const config = writeConfig(alone)
    dirs.push(path.dirname(config))
    expect((await runCli(["run", "-c", config])).code).toBe(0)
    fs.writeFileSync(config, `${alone}  - { name: skus, query: select sku from ${ITEMS}, format: csv, destination: { type: local, path: ./out } }\n`)
    expect((await runCli(["run", "-c", config])).code).toBe(0)
    const result = await runCli(["validate", "-c", config])
    expect(result.code).toBe(0)
    expect(findingLines(result.stdout)).toEqual([
      "WARN items: STALE_MARKER manifest.json: left from an earlier layout: other exports now write to this destination too, so runs write items.manifest.json and _SUCCESS.items; a reader of manifest.json sees an old run for ever — delete it and _SUCCESS once no reader uses them"
    ])
    // Both runs of items are kept, under the same names in either layout.
    expect(result.stdout).toContain("OK   items: 2 runs, 2 parts, 20 rows verified (1 warning)\n")
    expect(result.stdout).toContain("OK   skus: 1 part, 10 rows verified\n")
  }, 60_000)
})
