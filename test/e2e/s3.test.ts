import { createHash } from "node:crypto"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { readRows } from "../plugins/formats/parquet/read-back.js"
import { testPgUrl } from "../support/pg.js"
import type { S3TestServer } from "../support/s3/server.js"
import {
  arrayBufferOf,
  configFile,
  countOf,
  expectCommitted,
  isolateAwsEnv,
  runLogged,
  s3Destination,
  serverEnv,
  startWithBucket,
  writeRequests
} from "./s3-support.js"

// `rivet run` → s3 end to end: the built CLI, the real PostgreSQL, the S3 test server (SigV4-checking, real multipart).
const TABLE = "e2e_s3_orders"
const BUCKET = "rivet-e2e-s3-data"
// ~14 MiB of Parquet: several 5 MiB upload parts, and at least three 4 MiB files with max_file_size.
const ROWS = 600_000
const EPOCH_2024_MICROS = 1_704_067_200_000_000n

/** A column of every kind the acceptance list names; NULLs in name and flag. Row `i` is {@link expectedRow}(i). */
const CREATE_TABLE = `
  DROP TABLE IF EXISTS ${TABLE};
  CREATE TABLE ${TABLE} (id int8 PRIMARY KEY, amount numeric(12,2), name text, created_at timestamptz, flag bool);
  INSERT INTO ${TABLE}
  SELECT i,
         ((i * 7919) % 10000000 - 5000000) / 100.0,
         CASE WHEN i % 97 = 0 THEN NULL ELSE 'kunde ü ' || md5(i::text) END,
         timestamptz '2024-01-01 00:00:00+00' + i * interval '1 second' + (i % 1000000) * interval '1 microsecond',
         CASE WHEN i % 5 = 0 THEN NULL ELSE i % 2 = 0 END
  FROM generate_series(1::int8, ${ROWS}) AS i;
`

const centsText = (cents: bigint): string => {
  const abs = cents < 0n ? -cents : cents
  return `${cents < 0n ? "-" : ""}${abs / 100n}.${String(abs % 100n).padStart(2, "0")}`
}

/** Row `i` as readRows gives it back, computed independently of PostgreSQL. */
const expectedRow = (i: number) => ({
  id: BigInt(i),
  amount: centsText(((BigInt(i) * 7919n) % 10_000_000n) - 5_000_000n),
  name: i % 97 === 0 ? null : `kunde ü ${createHash("md5").update(String(i)).digest("hex")}`,
  created_at: EPOCH_2024_MICROS + BigInt(i) * 1_000_000n + BigInt(i % 1_000_000),
  flag: i % 5 === 0 ? null : i % 2 === 0
})

const toCents = (amount: unknown): bigint => BigInt(String(amount).replace(".", ""))

/** Rows by id (index id - 1); fails on an id out of range or seen twice. */
const indexById = (rows: ReadonlyArray<Record<string, unknown>>, into: Array<Record<string, unknown> | undefined>) => {
  for (const row of rows) {
    const id = Number(row["id"])
    if (!(id >= 1 && id <= ROWS) || into[id - 1] !== undefined) expect.fail(`id ${id} is out of range or duplicated`)
    into[id - 1] = row
  }
}

/** Every row against PostgreSQL's own text of it (id order), then the sum of amounts against SQL's sum. */
const compareWithSource = async (byId: ReadonlyArray<Record<string, unknown> | undefined>) => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  try {
    let next = 1
    let cents = 0n
    await sql`
      SELECT id::text AS id, amount::text AS amount, name,
             ((extract(epoch FROM created_at) * 1000000)::int8)::text AS created_at, flag
      FROM ${sql(TABLE)} ORDER BY ${sql(TABLE)}.id`.cursor(50_000, (rows) => {
      for (const source of rows) {
        const row = byId[next - 1]
        const same =
          row !== undefined &&
          String(row["id"]) === source["id"] &&
          row["amount"] === source["amount"] &&
          row["name"] === source["name"] &&
          String(row["created_at"]) === source["created_at"] &&
          row["flag"] === source["flag"]
        if (!same) {
          const read = row && { ...row, id: String(row["id"]), created_at: String(row["created_at"]) }
          expect(read, `row ${next}`).toEqual({ ...source })
        }
        cents += toCents(row?.["amount"])
        next++
      }
    })
    expect(next - 1).toBe(ROWS)
    const [total] = await sql`SELECT sum(amount)::text AS total FROM ${sql(TABLE)}`
    expect(centsText(cents)).toBe(total?.["total"])
  } finally {
    await sql.end()
  }
}

let server: S3TestServer
let env: Record<string, string>

beforeAll(async () => {
  isolateAwsEnv()
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(CREATE_TABLE).finally(() => sql.end())
  server = await startWithBucket(BUCKET)
  env = serverEnv(server)
})

afterAll(async () => {
  await server?.stop()
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`).finally(() => sql.end())
})

describe("rivet run → s3", () => {
  it("exports 600,000 rows to one Parquet object with manifest.json and _SUCCESS, every row exact", async () => {
    const config = configFile([
      { name: "s3_orders", table: TABLE, format: "parquet", destination: s3Destination(server, BUCKET, { prefix: "exports/daily" }) }
    ])
    const run = await runLogged(server, ["run", "-c", config], env)
    expect(run.stderr).toMatch(/status:\s+success/)
    expect(run.code).toBe(0)

    const keys = (await server.listObjects(BUCKET, "exports/")).map((object) => object.key).sort()
    expect(keys).toHaveLength(4)
    expect(keys[0]).toBe("exports/daily/_SUCCESS")
    expect(keys[1]).toMatch(/^exports\/daily\/_manifests\/s3_orders_\d{8}T\d{6}\.\d{3}\.json$/)
    expect(keys[2]).toBe("exports/daily/manifest.json")
    expect(keys[3]).toMatch(/^exports\/daily\/s3_orders_\d{8}_\d{6}_\d{3}\.parquet$/)
    const dataKey = keys[3]!

    const manifest = await expectCommitted(server, BUCKET, "exports/daily/")
    expect(manifest.row_count).toBe(ROWS)
    expect(manifest.parts).toEqual([expect.objectContaining({ path: dataKey.slice("exports/daily/".length), rows: ROWS })])

    // A multipart upload (the object is larger than the 8MiB default part), completed before the markers.
    const paths = run.requests.map((request) => `${request.operation} ${request.path}`)
    expect(run.requests.every((request) => request.status === 200)).toBe(true)
    expect(countOf(run.requests, "CreateMultipartUpload")).toBe(1)
    expect(countOf(run.requests, "UploadPart")).toBeGreaterThanOrEqual(2)
    const completed = paths.indexOf(`CompleteMultipartUpload /${BUCKET}/${dataKey}`)
    const keptPut = paths.indexOf(`PutObject /${BUCKET}/${keys[1]}`)
    const manifestPut = paths.indexOf(`PutObject /${BUCKET}/exports/daily/manifest.json`)
    expect(completed).toBeGreaterThanOrEqual(0)
    // The kept copy of the manifest before manifest.json, both after the data.
    expect(keptPut).toBeGreaterThan(completed)
    expect(manifestPut).toBeGreaterThan(keptPut)
    // _SUCCESS is the last write; then the run lists its keys' pending uploads (none) — the end-of-export cleanup.
    expect(paths.at(-2)).toBe(`PutObject /${BUCKET}/exports/daily/_SUCCESS`)
    expect(paths.at(-1)).toBe(`ListMultipartUploads /${BUCKET}/`)
    expect(await server.listMultipartUploads(BUCKET)).toEqual([])

    const rows = await readRows(arrayBufferOf(await server.getObject(BUCKET, dataKey)))
    expect(rows).toHaveLength(ROWS)
    const byId: Array<Record<string, unknown> | undefined> = new Array(ROWS)
    indexById(rows, byId)
    for (const id of [1, 2, 97, 300_000, ROWS - 1, ROWS]) expect(byId[id - 1], `id ${id}`).toEqual(expectedRow(id))
    await compareWithSource(byId)
  }, 180_000)

  it("max_file_size splits the export into contiguous _part0.._partN objects, each listed once in the manifest", async () => {
    const prefix = "exports/split/"
    const destination = s3Destination(server, BUCKET, { prefix, part_size: "5MiB" })
    const config = configFile([{ name: "s3_orders", table: TABLE, max_file_size: "4MiB", destination }])
    const run = await runLogged(server, ["run", "-c", config], env)
    expect(run.stderr).toMatch(/status:\s+success/)
    expect(run.code).toBe(0)

    const objects = await server.listObjects(BUCKET, prefix)
    const data = objects.flatMap((object) => {
      const match = /^exports\/split\/(s3_orders_\d{8}_\d{6}_\d{3})_part(\d+)\.parquet$/.exec(object.key)
      return match ? [{ ...object, stem: match[1]!, part: Number(match[2]) }] : []
    })
    expect(objects).toHaveLength(data.length + 3) // manifest.json, _SUCCESS and the kept manifest
    expect(new Set(data.map((object) => object.stem)).size).toBe(1)
    const numbers = data.map((object) => object.part).sort((a, b) => a - b)
    expect(numbers.length).toBeGreaterThanOrEqual(3)
    expect(numbers).toEqual(numbers.map((_, index) => index))

    const manifest = await expectCommitted(server, BUCKET, prefix)
    const listed = manifest.parts.map((part) => `${prefix}${part.path}`)
    expect([...listed].sort()).toEqual(data.map((object) => object.key).sort())
    expect(new Set(listed).size).toBe(listed.length)
    expect(manifest.parts.reduce((sum, part) => sum + part.rows, 0)).toBe(ROWS)
    expect(manifest.row_count).toBe(ROWS)

    // Every part is at most max_file_size, every part but the last close to it; every id appears in exactly one part.
    const byId: Array<Record<string, unknown> | undefined> = new Array(ROWS)
    for (const [index, part] of manifest.parts.entries()) {
      expect(part.path).toMatch(new RegExp(`_part${index}\\.parquet$`))
      expect(part.size_bytes).toBeLessThanOrEqual(4 * 2 ** 20)
      if (index < manifest.parts.length - 1) expect(part.size_bytes).toBeGreaterThan(3 * 2 ** 20)
      const rows = await readRows(arrayBufferOf(await server.getObject(BUCKET, `${prefix}${part.path}`)))
      expect(rows).toHaveLength(part.rows)
      indexById(rows, byId)
    }
    expect(byId.filter((row) => row !== undefined)).toHaveLength(ROWS)
    expect(await server.listMultipartUploads(BUCKET)).toEqual([])
    expect(writeRequests(run.requests).every((request) => request.status === 200)).toBe(true)
  }, 180_000)
})
