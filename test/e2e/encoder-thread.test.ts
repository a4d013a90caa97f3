import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import { gunzipSync } from "node:zlib"
import * as os from "node:os"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type * as BatchModule from "../../src/core/batch.js"
import type * as OwnedBytes from "../../src/core/owned-bytes.js"
import type * as Library from "../../src/index.js"
import type * as FirstPart from "../../src/engine/encoder-thread/first-part.js"
import type * as ThreadLayer from "../../src/engine/encoder-thread/layer.js"
import type * as Ndjson from "../../src/plugins/formats/ndjson/index.js"
import { readRows } from "../plugins/formats/parquet/read-back.js"
import { bytesPerBuffer } from "../support/buffers.js"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"

const TABLE = "e2e_parquet_thread"
const ROWS = 30_000

const setup = async () => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} AS
    SELECT i AS id,
           CASE WHEN i % 7 = 0 THEN NULL ELSE (i * 37 % 100000) / 100.0 END::numeric(12,2) AS amount,
           'name ' || i AS name,
           (ARRAY['new','paid','shipped'])[1 + i % 3] AS status,
           jsonb_build_object('i', i, 'big', 12345678901234567890::numeric + i) AS doc,
           md5(i::text)::uuid AS uid,
           timestamptz '2020-01-01 00:00:00+00' + i * interval '1.000001 second' AS at,
           CASE WHEN i % 5 = 0 THEN NULL ELSE ARRAY['t' || (i % 4), NULL] END AS tags
    FROM generate_series(1, ${ROWS}) AS i
  `)
  await sql.end()
}

const exportWith = async (args: ReadonlyArray<string>, extra = "") => {
  const config = writeConfig(`
source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: threaded
    query: "SELECT * FROM ${TABLE} ORDER BY id"
    format: parquet
    batch_size: 2000
    row_group_size: 2000
    max_file_size: 100KiB
${extra}
    destination: { type: local, path: out }
`)
  const result = await runCli(["run", "-c", config, ...args])
  const out = path.join(path.dirname(config), "out")
  const files = fs.existsSync(out) ? fs.readdirSync(out).sort() : []
  return { result, out, files }
}

/** The built modules: there the encoder thread's entry exists, and owned-bytes is the instance the thread module uses. */
type BuiltModules = [typeof Ndjson, typeof BatchModule, typeof OwnedBytes, typeof FirstPart, typeof ThreadLayer]
const [{ default: ndjson, makeNdjsonDriver }, { makeBatch }, { ownedBytes }, { makeEncoderThread }, { encoderInit }] = (await Promise.all([
  import("../../dist/plugins/formats/ndjson/index.js"),
  import("../../dist/core/batch.js"),
  import("../../dist/core/owned-bytes.js"),
  import("../../dist/engine/encoder-thread/first-part.js"),
  import("../../dist/engine/encoder-thread/layer.js")
])) as BuiltModules

const BATCH_ROWS = 5_000

/** One NDJSON part of `batches` batches of ids, encoded as the CLI's first part is: the engine's encoder thread over the driver. */
const encodeNdjson = (batches: number) => {
  const schema = { columns: [{ name: "id", type: { kind: "int32" as const }, nullable: false }] }
  return Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const config = { compression: "none" as const }
        const driver = yield* makeNdjsonDriver(config)
        const open = makeEncoderThread(encoderInit("ndjson", config, ndjson.encoderThread!), yield* Effect.scope, driver.open)
        const part = yield* open(schema, undefined)
        const written: Array<Uint8Array> = []
        for (let batch = 0; batch < batches; batch++) {
          const ids = Array.from({ length: BATCH_ROWS }, (_, i) => batch * BATCH_ROWS + i)
          written.push(...(yield* part.write(makeBatch(schema, [ids]))))
        }
        return [...written, ...(yield* part.finish)]
      })
    )
  )
}

const rowsOf = async (out: string, files: ReadonlyArray<string>) => {
  const rows: Array<Record<string, unknown>> = []
  for (const file of files.filter((name) => name.endsWith(".parquet"))) {
    const bytes = fs.readFileSync(path.join(out, file))
    rows.push(...(await readRows(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength))))
  }
  return rows
}

describe("parts encoded on the export's encoder thread (the CLI's default with two cores)", () => {
  beforeAll(setup)
  afterAll(async () => {
    const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
    await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
    await sql.end()
  })

  it("writes the same parts and rows as encoding on the reading thread", async () => {
    const threaded = await exportWith([])
    const inline = await exportWith(["--no-encoder-thread"])
    expect(threaded.result.code, threaded.result.stderr).toBe(0)
    expect(inline.result.code, inline.result.stderr).toBe(0)
    const parts = (files: ReadonlyArray<string>) => files.filter((name) => name.endsWith(".parquet")).length
    // Parts rotate on both paths; on the thread the encoded bytes trail the batches by one, so a part may hold
    // one batch more before it reaches max_file_size.
    expect(parts(inline.files)).toBeGreaterThan(2)
    expect(parts(threaded.files)).toBeGreaterThan(2)
    const rows = await rowsOf(threaded.out, threaded.files)
    expect(rows).toHaveLength(ROWS)
    expect(rows).toEqual(await rowsOf(inline.out, inline.files))
    expect(threaded.files).toContain("_SUCCESS")
  })

  it.each([
    ["csv", "compression: gzip", ".csv.gz"],
    ["ndjson", "", ".ndjson"]
  ])("%s: the same bytes as encoding on the reading thread", async (format, extra, suffix) => {
    // A meta column makes the CSV export take batches (not the server's rendering), so Rivet encodes it.
    const config = (dir: string) => `
source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: text
    query: "SELECT * FROM ${TABLE} ORDER BY id"
    format: ${format}
    ${extra}
    batch_size: 1500
    meta_columns: [row_hash]
    destination: { type: local, path: ${dir} }
`
    const contents = async (args: ReadonlyArray<string>) => {
      const file = writeConfig(config("out"))
      const result = await runCli(["run", "-c", file, ...args])
      expect(result.code, result.stderr).toBe(0)
      const out = path.join(path.dirname(file), "out")
      const parts = fs.readdirSync(out).filter((name) => name.endsWith(suffix)).sort()
      expect(parts).toHaveLength(1)
      const bytes = fs.readFileSync(path.join(out, parts[0]!))
      return suffix.endsWith(".gz") ? gunzipSync(bytes) : bytes
    }
    const threaded = await contents([])
    const inline = await contents(["--no-encoder-thread"])
    expect(threaded.toString("utf8").split("\n")).toHaveLength(ROWS + (format === "csv" ? 2 : 1))
    expect(Buffer.compare(threaded, inline)).toBe(0)
  })

  it("a value the thread cannot encode fails the run with the reading thread's message, and nothing is published", async () => {
    // The built library (dist/), as a program would use it: there the encoder thread's entry exists.
    const { mapRows, runExports } = (await import("../../dist/index.js")) as typeof Library
    // Every amount fits decimal(4,2) but row 4321's, which the source cannot see: only the encoder can refuse it.
    const widen = mapRows((row) => ({ ...row, amount: row.id === 4321 ? "123456.78" : "1.00" }), (schema) => ({
      columns: schema.columns.map((column) =>
        column.name === "amount" ? { ...column, type: { kind: "decimal" as const, precision: 4, scale: 2 } } : column
      )
    }))
    for (const encoderThread of [true, false]) {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-thread-fail-"))
      const failure = await runExports(
        {
          source: { type: "postgres", url: testPgUrl() },
          exports: [{ name: "threaded", query: `SELECT * FROM ${TABLE} ORDER BY id`, format: "parquet", destination: { type: "local", path: dir } }]
        },
        { transforms: { threaded: widen }, encoderThread }
      ).then(
        () => undefined,
        (error: unknown) => error as { message: string }
      )
      expect(failure?.message).toContain('column "amount", row')
      expect(failure?.message).toContain("does not fit decimal(4,2)")
      expect(fs.readdirSync(dir)).toEqual([])
    }
  })
  it("the thread's replies are handed over to the runtime with all their bytes, for the upload to free once written", async () => {
    const chunks = await encodeNdjson(2)
    expect(chunks.length).toBeGreaterThan(0)
    for (const [buffer, bytes] of bytesPerBuffer(chunks)) expect(ownedBytes(buffer)).toBe(bytes)
  })

  it("the export's first part, when it ends within its first batch, is encoded on the reading thread: no thread is started", async () => {
    const single = await encodeNdjson(1)
    // Bytes the thread did not send are nobody's to free.
    for (const buffer of bytesPerBuffer(single).keys()) expect(ownedBytes(buffer)).toBeUndefined()
    const text = new TextDecoder().decode(Buffer.concat(single))
    expect(text.split("\n")).toHaveLength(BATCH_ROWS + 1)
    expect(text.startsWith('{"id":0}\n{"id":1}\n')).toBe(true)
  })
})
