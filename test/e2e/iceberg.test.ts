import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runExportsEffect } from "../../src/api.js"
import type { ExportRun } from "../../src/engine/run.js"
import { untyped } from "../support/config.js"
import { decodeAvro, readIcebergTable, s3ObjectReader } from "../support/iceberg.js"
import { testPgUrl } from "../support/pg.js"
import type { S3TestServer } from "../support/s3/server.js"
import { s3Destination, startWithBucket } from "./s3-support.js"

// table_format: iceberg end to end on local disk: every table written is read back by icebird (an independent
// reader) and compared with PostgreSQL; the Avro files decode against the spec's schemas.
let sql: postgres.Sql
const tempDirs: Array<string> = []
const tempDir = () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-iceberg-"))
  tempDirs.push(dir)
  return dir
}

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ice_orders;
    CREATE TABLE ice_orders (id bigint PRIMARY KEY, country text, amount numeric(12,2), qty smallint, created_at timestamptz,
      day date, ok boolean, ref uuid, tags text[], payload jsonb, updated_at timestamptz NOT NULL);
    INSERT INTO ice_orders SELECT i, (ARRAY['FR', 'DE', NULL])[1 + i % 3], (i * 1.25)::numeric(12,2), (i % 100)::smallint,
      CASE WHEN i % 7 = 0 THEN NULL ELSE timestamptz '2024-01-15 10:00:00.123456+00' + i * interval '9 days' END,
      date '2024-01-01' + i, i % 2 = 0, md5(i::text)::uuid, ARRAY['t' || i], jsonb_build_object('n', i),
      timestamptz '2024-06-01 00:00:00+00' + i * interval '1 second'
      FROM generate_series(1, 300) AS i;
  `)
}, 60_000)

afterAll(async () => {
  await sql?.end()
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true })
})

const run = (
  dir: string,
  exports: ReadonlyArray<Record<string, unknown>>,
  extra: Record<string, unknown> = {},
  env: Readonly<Record<string, string | undefined>> = process.env
): Promise<ReadonlyArray<ExportRun>> =>
  Effect.runPromise(runExportsEffect(untyped({ source: { type: "postgres", url: testPgUrl() }, exports, ...extra }), { configDir: dir, env }))

const succeeded = (outcome: ExportRun | undefined) => {
  if (outcome === undefined) throw new Error("no export ran")
  if (outcome._tag === "failure") throw new Error(`export failed: ${outcome.error.message}`)
  return outcome.result
}

const orders = (extra: Record<string, unknown> = {}) => ({
  name: "orders",
  table: "public.ice_orders",
  mode: "incremental",
  cursor_column: "updated_at",
  table_format: "iceberg",
  destination: { type: "local", path: "lake/orders" },
  ...extra
})

const tableUrl = (dir: string, sub = "lake/orders") => `file://${path.join(dir, sub)}`

/** The path of a local table's file from its (raw, not percent-encoded) location. */
const localPath = (location: string) => location.slice("file://".length)

const ids = (rows: ReadonlyArray<Record<string, unknown>>) => rows.map((row) => Number(row["id"])).sort((a, b) => a - b)

describe("table_format: iceberg (file-system catalog, local)", () => {
  it("incremental: two runs are two append snapshots; icebird reads every row and value as PostgreSQL has them", async () => {
    const dir = tempDir()
    succeeded((await run(dir, [orders({ query: undefined })]))[0])
    await sql`INSERT INTO ice_orders (id, country, updated_at) VALUES (1001, 'NL', timestamptz '2030-01-01 00:00:00+00')`
    try {
      succeeded((await run(dir, [orders()]))[0])
      const { metadata, rows } = await readIcebergTable(tableUrl(dir))
      expect(metadata["format-version"]).toBe(2)
      expect(metadata.snapshots.map((snapshot) => snapshot.summary.operation)).toEqual(["append", "append"])
      expect(metadata.snapshots[1]!.summary["total-records"]).toBe("301")
      expect(ids(rows)).toEqual([...Array.from({ length: 300 }, (_, i) => i + 1), 1001])
      const expected = await sql`SELECT id, country, amount::text, qty, ok, ref::text, day::text, payload::text,
        (extract(epoch from created_at) * 1000000)::bigint AS created_us FROM ice_orders ORDER BY id`
      const byId = new Map(rows.map((row) => [Number(row["id"]), row]))
      for (const want of expected) {
        const got = byId.get(Number(want["id"]))!
        expect(got["country"] ?? null).toBe(want["country"])
        expect(got["qty"] ?? null).toBe(want["qty"])
        expect(got["ok"] ?? null).toBe(want["ok"])
        // icebird gives a uuid's 16 bytes.
        if (want["ref"] === null) expect(got["ref"] ?? null).toBeNull()
        else expect(Buffer.from(got["ref"] as Uint8Array).toString("hex")).toBe(String(want["ref"]).replaceAll("-", ""))
        if (want["amount"] !== null) expect(Number(got["amount"])).toBeCloseTo(Number(want["amount"]), 2)
        if (want["payload"] !== null) expect(JSON.parse(String(got["payload"]))).toEqual(JSON.parse(String(want["payload"])))
        if (want["created_us"] !== null) expect((got["created_at"] as Date).getTime()).toBe(Math.floor(Number(want["created_us"]) / 1000))
        else expect(got["created_at"] ?? null).toBeNull()
      }
      // Field ids are stable across runs: one schema, the Parquet files carry its ids.
      expect(metadata.schemas).toHaveLength(1)
      const fields = metadata.schemas[0]!.fields as ReadonlyArray<{ id: number; name: string }>
      expect(fields.map((field) => field.name)).toEqual(["id", "country", "amount", "qty", "created_at", "day", "ok", "ref", "tags", "payload", "updated_at"])
      expect(fs.readFileSync(path.join(dir, "lake/orders/metadata/version-hint.text"), "utf8")).toBe("2")
      // The manifest list and manifest decode against the spec's schemas, with the files' stats.
      const list = await decodeAvro(fs.readFileSync(localPath(metadata.snapshots[1]!["manifest-list"])), SPEC_MANIFEST_FILE)
      expect(list.records).toHaveLength(2)
      const manifest = await decodeAvro(fs.readFileSync(localPath(String(list.records[0]!["manifest_path"]))), SPEC_MANIFEST_ENTRY)
      expect(manifest.metadata["format-version"]).toBe("2")
      const entry = manifest.records[0]!["data_file"] as Record<string, unknown>
      expect(entry["record_count"]).toBe(1)
      const bounds = new Map((entry["lower_bounds"] as Array<{ key: number; value: Buffer }>).map(({ key, value }) => [key, value]))
      expect(bounds.get(1)!.readBigInt64LE()).toBe(1001n)
      expect(bounds.get(2)!.toString("utf8")).toBe("NL")
    } finally {
      await sql`DELETE FROM ice_orders WHERE id = 1001`
    }
  }, 60_000)

  it("full: each run overwrites the table's files; an empty run commits nothing", async () => {
    const dir = tempDir()
    const full = orders({ mode: "full", cursor_column: undefined, name: "full_orders", query: "SELECT id, country FROM ice_orders WHERE id <= 10", table: undefined })
    succeeded((await run(dir, [full]))[0])
    succeeded((await run(dir, [{ ...full, query: "SELECT id, country FROM ice_orders WHERE id <= 4" }]))[0])
    succeeded((await run(dir, [{ ...full, query: "SELECT id, country FROM ice_orders WHERE id < 0" }]))[0])
    const { metadata, rows } = await readIcebergTable(tableUrl(dir))
    expect(metadata.snapshots.map((snapshot) => snapshot.summary.operation)).toEqual(["overwrite", "overwrite"])
    expect(metadata.snapshots[1]!.summary["deleted-records"]).toBe("10")
    expect(ids(rows)).toEqual([1, 2, 3, 4])
  }, 60_000)
})

describe("table_format: iceberg, the table's evolution and its writers", () => {
  it("partition_by [created_at:month, country]: a month transform and an identity field, NULLs in their own partition", async () => {
    const dir = tempDir()
    succeeded((await run(dir, [orders({ partition_by: ["created_at:month", "country"] })]))[0])
    const { metadata, rows } = await readIcebergTable(tableUrl(dir))
    expect(metadata["partition-specs"][0]!.fields.map((field) => [field.name, field.transform])).toEqual([
      ["created_at_month", "month"],
      ["country", "identity"]
    ])
    expect(ids(rows)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1))
    const list = await decodeAvro(fs.readFileSync(localPath(metadata.snapshots[0]!["manifest-list"])), SPEC_MANIFEST_FILE)
    const manifest = await decodeAvro(fs.readFileSync(localPath(String(list.records[0]!["manifest_path"]))), partitionedEntry)
    const tuples = manifest.records.map((record) => (record["data_file"] as { partition: Record<string, number | string | null> }).partition)
    const expected = await sql`SELECT DISTINCT (extract(year from created_at AT TIME ZONE 'UTC')::int - 1970) * 12
      + extract(month from created_at AT TIME ZONE 'UTC')::int - 1 AS month, country FROM ice_orders`
    const key = (month: unknown, country: unknown) => `${month ?? "null"}/${country ?? "null"}`
    expect(new Set(tuples.map((tuple) => key(tuple["created_at_month"], tuple["country"])))).toEqual(
      new Set(expected.map((row) => key(row["month"], row["country"])))
    )
    expect(tuples.some((tuple) => tuple["created_at_month"] === null)).toBe(true)
  }, 60_000)

  it("a column added between runs gets a new field id and schema 1; the first run's files read with it as NULL", async () => {
    const dir = tempDir()
    const narrow = orders({ table: undefined, query: "SELECT id, updated_at FROM ice_orders WHERE id <= 5" })
    succeeded((await run(dir, [narrow]))[0])
    succeeded((await run(dir, [{ ...narrow, query: "SELECT id, updated_at, country FROM ice_orders WHERE id <= 8" }]))[0])
    const { metadata, rows } = await readIcebergTable(tableUrl(dir))
    expect(metadata["current-schema-id"]).toBe(1)
    expect(metadata.schemas.map((schema) => schema.fields.map((field) => `${field.id}:${field.name}`))).toEqual([
      ["1:id", "2:updated_at"],
      ["1:id", "2:updated_at", "3:country"]
    ])
    const countries = new Map(rows.map((row) => [Number(row["id"]), row["country"] ?? null]))
    expect([...countries].sort(([a], [b]) => a - b)).toEqual([[1, null], [2, null], [3, null], [4, null], [5, null], [6, "FR"], [7, "DE"], [8, null]])
  }, 60_000)

  it("two exports committing to one table at once: both snapshots land, no append lost", async () => {
    const dir = tempDir()
    const shared = (name: string, where: string) =>
      orders({ name, table: undefined, query: `SELECT id, country, updated_at FROM ice_orders WHERE ${where}`, table_format: { type: "iceberg", name: "shared" } })
    const results = await run(dir, [shared("evens", "id % 2 = 0"), shared("odds", "id % 2 = 1")], { parallel_exports: 2 })
    results.forEach(succeeded)
    const { metadata, rows } = await readIcebergTable(tableUrl(dir))
    expect(metadata.snapshots).toHaveLength(2)
    expect(ids(rows)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1))
  }, 60_000)

  it("chunked with parallel chunks: one append snapshot listing every chunk's file", async () => {
    const dir = tempDir()
    const chunked = orders({ mode: "chunked", cursor_column: undefined, chunk_column: "id", chunk_size: 100, parallel: 2 })
    succeeded((await run(dir, [chunked]))[0])
    const { metadata, rows } = await readIcebergTable(tableUrl(dir))
    expect(metadata.snapshots.map((snapshot) => [snapshot.summary.operation, snapshot.summary["added-data-files"]])).toEqual([["append", "3"]])
    expect(ids(rows)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1))
  }, 60_000)

  it("a column without an Iceberg type is refused before anything is written, naming it", async () => {
    const dir = tempDir()
    const [outcome] = await run(dir, [orders({ table: undefined, query: "SELECT id, updated_at, 1::numeric AS big FROM ice_orders", columns: { big: "decimal(50,0)" } })])
    if (outcome?._tag !== "failure") throw new Error("the export should have failed")
    expect(outcome.error.message).toContain('column "big": decimal(50,0) is wider than Iceberg\'s decimals')
    expect(fs.existsSync(path.join(dir, "lake/orders/data"))).toBe(false)
  }, 60_000)

  it("a run that fails before publishing commits nothing; the table stays readable at its last snapshot", async () => {
    const dir = tempDir()
    succeeded((await run(dir, [orders({ table: undefined, query: "SELECT id, updated_at FROM ice_orders WHERE id <= 3" })]))[0])
    const failed = await run(dir, [orders({ table: undefined, query: "SELECT id, updated_at FROM ice_orders", quality: { row_count_max: 10 } })])
    expect(failed[0]!._tag).toBe("failure")
    const { metadata, rows } = await readIcebergTable(tableUrl(dir))
    expect(metadata.snapshots).toHaveLength(1)
    expect(ids(rows)).toEqual([1, 2, 3])
  }, 60_000)
})

describe.each([
  ["PostgreSQL", () => testPgUrl()],
  ["SQLite", (dir: string) => `sqlite:${path.join(dir, "catalog.db")}`]
])("table_format: iceberg with a SQL catalog in %s", (_label, catalogUrl) => {
  it("iceberg_tables holds the current and previous metadata; two exports at once both land through its compare-and-set", async () => {
    const dir = tempDir()
    const catalogName = `rivet_test_${path.basename(dir).replace(/[^A-Za-z0-9]/g, "_")}`
    process.env["ICEBERG_TEST_CATALOG_URL"] = catalogUrl(dir)
    const format = { type: "iceberg", catalog: { type: "sql", url_env: "ICEBERG_TEST_CATALOG_URL", name: catalogName }, namespace: "shop", name: "orders" }
    const shared = (name: string, where: string) =>
      orders({ name, table: undefined, query: `SELECT id, country, updated_at FROM ice_orders WHERE ${where}`, table_format: format })
    try {
      results(await run(dir, [shared("evens", "id % 2 = 0 AND id <= 100"), shared("odds", "id % 2 = 1 AND id <= 100")], { parallel_exports: 2 }))
      results(await run(dir, [shared("evens", "id % 2 = 0"), shared("odds", "id % 2 = 1")], { parallel_exports: 2 }))
      const row = await catalogRow(catalogUrl(dir), catalogName)
      expect(row?.["previous_metadata_location"]).toMatch(/\/metadata\/00003-[0-9a-f-]+\.metadata\.json$/)
      const location = String(row?.["metadata_location"])
      expect(location).toMatch(/\/metadata\/00004-[0-9a-f-]+\.metadata\.json$/)
      const { metadata, rows } = await readIcebergTable(tableUrl(dir), undefined, path.basename(location))
      expect(metadata.snapshots).toHaveLength(4)
      expect(ids(rows)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1))
    } finally {
      delete process.env["ICEBERG_TEST_CATALOG_URL"]
      if (catalogUrl(dir).startsWith("postgres")) await sql`DELETE FROM iceberg_tables WHERE catalog_name = ${catalogName}`
    }
  }, 60_000)
})

/** The table's row in a SQL catalog (PostgreSQL, or the SQLite file of a `sqlite:` URL). */
const catalogRow = async (url: string, catalogName: string): Promise<Record<string, unknown> | undefined> => {
  const query = "SELECT metadata_location, previous_metadata_location FROM iceberg_tables WHERE catalog_name = $1 AND table_namespace = 'shop' AND table_name = 'orders'"
  if (url.startsWith("postgres")) return (await sql.unsafe(query, [catalogName]))[0]
  const Database = (await import("better-sqlite3")).default
  const db = new Database(url.slice("sqlite:".length), { readonly: true })
  try {
    return db.prepare(query.replace("$1", "?")).get(catalogName) as Record<string, unknown> | undefined
  } finally {
    db.close()
  }
}

const results = (runs: ReadonlyArray<ExportRun>) => runs.map(succeeded)

describe("table_format: iceberg on S3", () => {
  const BUCKET = "rivet-iceberg"
  let server: S3TestServer
  beforeAll(async () => {
    server = await startWithBucket(BUCKET)
  })
  afterAll(async () => {
    await server?.stop()
  })

  it("two incremental runs: metadata committed with If-None-Match, read back by icebird from the bucket", async () => {
    const dir = tempDir()
    const env = { ...process.env, ICE_KEY: server.credentials.accessKeyId, ICE_SECRET: server.credentials.secretAccessKey }
    const destination = s3Destination(server, BUCKET, { prefix: "warehouse/orders/", access_key_env: "ICE_KEY", secret_key_env: "ICE_SECRET" })
    const spec = orders({ table: undefined, query: "SELECT id, country, amount, updated_at FROM ice_orders WHERE id <= 200", destination })
    succeeded((await run(dir, [spec], {}, env))[0])
    succeeded((await run(dir, [{ ...spec, query: "SELECT id, country, amount, updated_at FROM ice_orders" }], {}, env))[0])
    const { metadata, rows } = await readIcebergTable(`s3://${BUCKET}/warehouse/orders`, s3ObjectReader((bucket, key) => server.getObject(bucket, key)))
    expect(metadata.snapshots.map((snapshot) => snapshot.summary.operation)).toEqual(["append", "append"])
    expect(ids(rows)).toEqual(Array.from({ length: 300 }, (_, i) => i + 1))
    const conditional = server.requests().filter((request) => request.operation === "PutObject" && request.path.endsWith(".metadata.json"))
    expect(conditional.map((request) => request.status)).toEqual([200, 200])
    expect(await server.getObject(BUCKET, "warehouse/orders/metadata/version-hint.text").then((bytes) => Buffer.from(bytes).toString())).toBe("2")
  }, 60_000)
})

type SpecField = readonly [name: string, type: unknown, fieldId: number]
const specRecord = (name: string, fields: ReadonlyArray<SpecField>) => ({
  type: "record",
  name,
  fields: fields.map(([field, type, id]) => ({ name: field, type, "field-id": id, ...(Array.isArray(type) ? { default: null } : {}) }))
})

/** The spec's manifest_file (v2) with its field ids, as Iceberg's spec lists them — written here, not taken from Rivet. */
const SPEC_MANIFEST_FILE = specRecord("manifest_file", [
  ["manifest_path", "string", 500], ["manifest_length", "long", 501], ["partition_spec_id", "int", 502], ["content", "int", 517],
  ["sequence_number", "long", 515], ["min_sequence_number", "long", 516], ["added_snapshot_id", "long", 503],
  ["added_files_count", "int", 504], ["existing_files_count", "int", 505], ["deleted_files_count", "int", 506],
  ["added_rows_count", "long", 512], ["existing_rows_count", "long", 513], ["deleted_rows_count", "long", 514]
])

/** The spec's manifest_entry (v2), the data_file fields a reader needs. */
const partitionedEntry = specRecord("manifest_entry", [
  ["status", "int", 0],
  ["data_file", specRecord("r2", [
    ["file_path", "string", 100],
    ["partition", specRecord("r102", [["created_at_month", ["null", "int"], 1000], ["country", ["null", "string"], 1001]]), 102]
  ]), 2]
])
const SPEC_BOUNDS = { type: "array", items: specRecord("k126_v127", [["key", "int", 126], ["value", "bytes", 127]]) }
const SPEC_MANIFEST_ENTRY = specRecord("manifest_entry", [
  ["status", "int", 0],
  ["snapshot_id", ["null", "long"], 1],
  ["data_file", specRecord("r2", [
    ["content", "int", 134], ["file_path", "string", 100], ["file_format", "string", 101], ["record_count", "long", 103],
    ["file_size_in_bytes", "long", 104], ["lower_bounds", ["null", SPEC_BOUNDS], 125]
  ]), 2]
])
