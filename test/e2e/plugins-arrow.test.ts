import * as fs from "node:fs"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import { runProcess } from "../support/process.js"

/**
 * Acceptance for issue #6: a config with `plugins:` loads the Arrow format package from a path relative to the
 * config file, the CLI exports a real table with it, and apache-arrow reads back exactly the source rows.
 */

const ROOT = path.resolve(import.meta.dirname, "../..")
const PLUGIN_DIR = path.join(ROOT, "plugins/rivet-format-arrow")
const TABLE = "plugarrow_values"

/** The little of apache-arrow this test uses (the package is installed in the plugin, not at the root). */
interface ArrowData {
  readonly length: number
  readonly values: ArrayLike<number | bigint> & { subarray(begin: number, end: number): Uint32Array }
  getValid(index: number): boolean
}
interface ArrowVector {
  readonly data: ReadonlyArray<ArrowData>
  get(index: number): unknown
}
interface ArrowTable {
  readonly numRows: number
  readonly batches: ReadonlyArray<unknown>
  readonly schema: { readonly fields: ReadonlyArray<{ readonly name: string; readonly type: { toString(): string } }> }
  getChild(name: string): ArrowVector | null
}
interface ArrowModule {
  tableFromIPC(bytes: Uint8Array): ArrowTable
}

let arrow: ArrowModule
const dirs: Array<string> = []

beforeAll(async () => {
  // Installs the plugin's own dependencies (when missing) and builds it, as `npm run test:plugins` does.
  const prepared = await runProcess(process.execPath, [path.join(ROOT, "scripts/test-plugins.mjs"), "--prepare", PLUGIN_DIR])
  expect(prepared.code, prepared.stderr).toBe(0)
  arrow = (await import(pathToFileURL(path.join(PLUGIN_DIR, "node_modules/apache-arrow/Arrow.node.mjs")).href)) as ArrowModule

  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (
      id int8 PRIMARY KEY, small int2, num int4, price numeric(12,2), ratio float8, approx float4, label text,
      active bool, day date, at_time time, local_ts timestamp, at timestamptz, ref uuid, doc jsonb, blob bytea,
      span interval, tags text[], scores int4[]
    );
    INSERT INTO ${TABLE}
    SELECT i, (i % 100 - 50)::int2, i * 1000, (i * 12.34 - 5000)::numeric(12,2), i / 7.0, (i % 8) * 0.25, 'label ' || i || ' ☃',
           i % 3 = 0, date '1969-12-25' + i, time '00:00:00.000001' + i * interval '1 minute 0.000001 second',
           timestamp '1960-01-01 00:00:00.123456' + i * interval '37 days 1 microsecond',
           timestamptz '2024-02-29 23:59:59.999999+00' - i * interval '13 hours 1 microsecond',
           md5(i::text)::uuid, jsonb_build_object('i', i, 'big', 12345678901234567890.5), decode(lpad(to_hex(i), 6, '0'), 'hex'),
           make_interval(months => i % 13, days => i % 5, secs => i * 1.5), ARRAY['a' || i, NULL, ''], ARRAY[i, -i]
    FROM generate_series(1, 3000) AS i;
    INSERT INTO ${TABLE} (id) VALUES (0);
  `)
  await sql.end()
}, 600_000)

afterAll(async () => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** Each column as apache-arrow gives it, with the integers behind timestamps, dates, times and decimals. */
const readColumn = (vector: ArrowVector, raw: "int" | "decimal2" | undefined): Array<unknown> =>
  vector.data.flatMap((data) =>
    Array.from({ length: data.length }, (_, i) => {
      if (!data.getValid(i)) return null
      if (raw === "int") return data.values[i]
      if (raw === "decimal2") {
        let unsigned = 0n
        const words = data.values.subarray(i * 4, i * 4 + 4)
        for (let w = 3; w >= 0; w--) unsigned = (unsigned << 32n) | BigInt(words[w]!)
        const cents = BigInt.asIntN(128, unsigned)
        const digits = (cents < 0n ? -cents : cents).toString().padStart(3, "0")
        return `${cents < 0n ? "-" : ""}${digits.slice(0, -2)}.${digits.slice(-2)}`
      }
      return null
    })
  )

/** The source rows in the representation the Arrow file must hold, computed by PostgreSQL itself. */
const expectedRows = async () => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe("SET intervalstyle = 'iso_8601'")
    return await sql.unsafe(`
      SELECT id::text AS id, small, num, price::text AS price, ratio, approx, label, active,
             (day - date '1970-01-01') AS day, (extract(epoch FROM at_time) * 1000000)::int8::text AS at_time,
             (extract(epoch FROM local_ts) * 1000000)::int8::text AS local_ts,
             (extract(epoch FROM at) * 1000000)::int8::text AS at, ref::text AS ref, doc::text AS doc,
             encode(blob, 'hex') AS blob, span::text AS span, to_json(tags)::text AS tags, to_json(scores)::text AS scores
      FROM ${TABLE} AS t ORDER BY t.id`)
  } finally {
    await sql.end()
  }
}

describe("plugins: from the CLI — the Arrow format package", () => {
  it("exports a table of varied types to an Arrow file that apache-arrow reads back as the source rows", async () => {
    const file = writeConfig("")
    const dir = path.dirname(file)
    dirs.push(dir)
    fs.writeFileSync(
      file,
      `plugins:
  - ${path.relative(dir, PLUGIN_DIR)}
source:
  type: postgres
  url: ${testPgUrl()}
exports:
  - name: values
    query: SELECT * FROM ${TABLE} ORDER BY id
    format: arrow
    batch_size: 1000
    destination:
      type: local
      path: ./out
`
    )
    const result = await runCli(["run", "-c", file])
    expect(result.stderr).toMatch(/^ {2}status: +success$/m)
    expect(result.code).toBe(0)

    const out = path.join(dir, "out")
    const manifest = JSON.parse(fs.readFileSync(path.join(out, "manifest.json"), "utf8")) as {
      format: string
      row_count: number
      parts: ReadonlyArray<{ path: string; rows: number }>
    }
    expect(manifest.format).toBe("arrow")
    expect(manifest.parts).toHaveLength(1)
    expect(manifest.parts[0]!.path).toMatch(/^values_\d{8}_\d{6}_\d{3}\.arrow$/)
    expect(fs.existsSync(path.join(out, "_SUCCESS"))).toBe(true)

    const table = arrow.tableFromIPC(fs.readFileSync(path.join(out, manifest.parts[0]!.path)))
    expect(table.numRows).toBe(3001)
    expect(table.batches).toHaveLength(4)
    expect(Object.fromEntries(table.schema.fields.map((field) => [field.name, String(field.type)]))).toMatchObject({
      id: "Int64",
      price: "Decimal[12e+2]",
      day: "Date32<DAY>",
      at_time: "Time64<MICROSECOND>",
      local_ts: "Timestamp<MICROSECOND>",
      at: "Timestamp<MICROSECOND, UTC>",
      blob: "Binary",
      tags: "List<Utf8>",
      scores: "List<Int32>"
    })

    const column = (name: string, raw?: "int" | "decimal2") => {
      const vector = table.getChild(name)!
      return raw ? readColumn(vector, raw) : Array.from({ length: table.numRows }, (_, i) => vector.get(i))
    }
    const list = (value: unknown) => (value === null ? null : [...(value as Iterable<unknown>)])
    const hex = (value: unknown) => (value === null ? null : Buffer.from(value as Uint8Array).toString("hex"))
    const actual = {
      id: column("id").map((v) => (v === null ? null : String(v))),
      small: column("small"),
      num: column("num"),
      price: column("price", "decimal2"),
      ratio: column("ratio"),
      approx: column("approx"),
      label: column("label"),
      active: column("active"),
      day: column("day", "int"),
      at_time: column("at_time", "int").map((v) => (v === null ? null : String(v))),
      local_ts: column("local_ts", "int").map((v) => (v === null ? null : String(v))),
      at: column("at", "int").map((v) => (v === null ? null : String(v))),
      ref: column("ref"),
      doc: column("doc"),
      blob: column("blob").map(hex),
      span: column("span"),
      tags: column("tags").map(list),
      scores: column("scores").map(list)
    }
    // Arrays come as JSON text: postgres.js's simple-protocol array parser reads a NULL element as the string "NULL".
    const rows = (await expectedRows()).map((row) => ({
      ...row,
      tags: row["tags"] === null ? null : JSON.parse(row["tags"] as string),
      scores: row["scores"] === null ? null : JSON.parse(row["scores"] as string)
    }))
    for (const [name, values] of Object.entries(actual)) {
      expect(values, name).toEqual(rows.map((row) => (row as Record<string, unknown>)[name] ?? null))
    }
  })

  it("rivet plugins -c lists the arrow format with the plugins: entry it came from", async () => {
    const file = writeConfig("")
    dirs.push(path.dirname(file))
    const relative = path.relative(path.dirname(file), PLUGIN_DIR)
    fs.writeFileSync(file, `plugins: ["${relative}"]\n`)
    const result = await runCli(["plugins", "-c", file])
    expect(result.code).toBe(0)
    expect(result.stdout).toMatch(new RegExp(`^ {2}arrow +'${relative.replaceAll(".", "\\.")}' +Apache Arrow IPC file`, "m"))
  })
})
