import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { decodePartitionName } from "../../src/engine/partition/escape.js"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import { duckRows, listFiles } from "./partition-support.js"

// Partition values whose directory names need more than Hive's escaping: the literal default-partition text, values
// too long for a file name, and values that differ only in case or Unicode normalisation.
const HIVE_DEFAULT = "__HIVE_DEFAULT_PARTITION__"
const NFC = "caf\u00e9"
const NFD = "cafe\u0301"
const LONG_L = "L".repeat(300)
const SLASHES = "/".repeat(90)
const NAMES: ReadonlyArray<string | null> = [null, "", HIVE_DEFAULT, "Abc", "abc", NFC, NFD, LONG_L, SLASHES, "FR"]
const ROWS = 2000
const nameOf = (id: number) => NAMES[id % NAMES.length]!
/** As the manifest records it (and Hive reads it): "" shares NULL's default partition. */
const recordedOf = (id: number) => nameOf(id) || null

type Manifest = { parts: Array<{ path: string; rows: number; partition: Record<string, string | null> }> }

let sql: postgres.Sql
const tempDirs: Array<string> = []

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS part_names;
    CREATE TABLE part_names (id int PRIMARY KEY, name text, a text, b text, c text, d text, broken boolean NOT NULL DEFAULT false)`)
  const rows = Array.from({ length: ROWS }, (_, i) => ({ id: i + 1, name: nameOf(i + 1), a: SLASHES, b: LONG_L, c: i % 2 ? "Abc" : "abc", d: "日".repeat(100) }))
  await sql`INSERT INTO part_names ${sql(rows)}`
}, 60_000)

afterAll(async () => {
  await sql?.end()
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** A config file in a fresh directory, its exports' `out` paths made absolute under it. */
const configWith = (exports: ReadonlyArray<Record<string, unknown>>) => {
  const file = writeConfig("{}")
  const dir = path.dirname(file)
  tempDirs.push(dir)
  const placed = exports.map((spec) => ({ ...spec, destination: { type: "local", path: path.join(dir, String(spec["out"])) }, out: undefined }))
  fs.writeFileSync(file, JSON.stringify({ source: { type: "postgres", url: testPgUrl() }, exports: placed }, null, 2))
  return { file, out: (name: string) => path.join(dir, name) }
}

const readManifest = (dir: string) => JSON.parse(fs.readFileSync(path.join(dir, "manifest.json"), "utf8")) as Manifest

const byteLength = (text: string) => Buffer.byteLength(text, "utf8")
/** What a case- and normalisation-insensitive file system (APFS, NTFS) compares names by. */
const folded = (name: string) => name.normalize("NFD").toUpperCase().toLowerCase()

/** Every part's ids (read from the file) belong to the value its manifest entry records. */
const expectRecordedValues = async (dir: string, manifest: Manifest, reader: (file: string) => string) => {
  let rows = 0
  for (const part of manifest.parts) {
    const ids = (await duckRows(`SELECT id FROM ${reader(path.join(dir, part.path))}`)).map((row) => Number(row["id"]))
    expect(ids.length).toBe(part.rows)
    for (const id of ids) expect(part.partition, part.path).toEqual({ name: recordedOf(id) })
    rows += ids.length
  }
  expect(rows).toBe(ROWS)
}

/** The directory of each recorded value: exactly one per value, however many parts and chunks wrote it. */
const directoriesByValue = (manifest: Manifest) => {
  const byValue = new Map<string | null, Set<string>>()
  for (const part of manifest.parts) {
    const value = part.partition["name"]!
    byValue.set(value, (byValue.get(value) ?? new Set()).add(path.dirname(part.path)))
  }
  for (const [value, directories] of byValue) expect(directories.size, String(value)).toBe(1)
  return new Map([...byValue].map(([value, directories]) => [value, [...directories][0]!]))
}

describe("partition directory names for values Hive's escaping alone would merge, lose or refuse", () => {
  it("NULL and the literal default-partition text, 300 × L and 90 × '/', Abc/abc and NFC/NFD café: separate directories, true values in the manifest and in DuckDB", async () => {
    const { file, out } = configWith([
      { name: "names", query: "SELECT id, name FROM part_names", format: "parquet", partition_by: ["name"], out: "full" },
      // Ten chunks, each writing every value: a value's directory is the same in every chunk.
      { name: "names_chunked", query: "SELECT id, name FROM part_names", format: "csv", mode: "chunked", chunk_column: "id", chunk_size: 200, partition_by: ["name"], out: "chunked" }
    ])
    const dir = out("full")
    const chunkedDir = out("chunked")
    const run = await runCli(["run", "-c", file])
    expect(run.code, run.stdout + run.stderr).toBe(0)

    for (const out of [dir, chunkedDir]) {
      // Every path segment fits a file name.
      for (const name of listFiles(out)) for (const segment of name.split("/")) expect(byteLength(segment), name).toBeLessThanOrEqual(255)
    }
    const manifest = readManifest(dir)
    await expectRecordedValues(dir, manifest, (file) => `read_parquet('${file}')`)
    const chunked = readManifest(chunkedDir)
    expect(chunked.parts.length).toBeGreaterThanOrEqual(10 * 9)
    await expectRecordedValues(chunkedDir, chunked, (file) => `read_csv('${file}', header = true)`)

    const directories = directoriesByValue(manifest)
    expect(directoriesByValue(chunked)).toEqual(directories)
    expect(directories.size).toBe(NAMES.length - 1)
    // NULL (and "") in Hive's default partition, the literal text elsewhere.
    expect(directories.get(null)).toBe(`name=${HIVE_DEFAULT}`)
    expect(directories.get(HIVE_DEFAULT)).not.toBe(`name=${HIVE_DEFAULT}`)
    // No two directories are one name on a case- or normalisation-insensitive file system.
    const all = [...directories.values()]
    expect(new Set(all.map(folded)).size).toBe(all.length)
    expect(folded(directories.get("Abc")!)).not.toBe(folded(directories.get("abc")!))
    expect(folded(directories.get(NFC)!)).not.toBe(folded(directories.get(NFD)!))
    // The long values get bounded names: a start of the escaped text, %7E and a hash.
    for (const long of [LONG_L, SLASHES]) expect(directories.get(long)).toMatch(/%7E[0-9a-f]{20}$/)

    // DuckDB reads every row's value back exactly (the NFD form as NFD), except a bounded name's, which reads as
    // the name itself — its value is the manifest's.
    const read = await duckRows(`SELECT id, name FROM read_parquet('${dir}/**/*.parquet', hive_partitioning = true, hive_types = {'name': VARCHAR})`)
    expect(read.length).toBe(ROWS)
    for (const row of read) {
      const id = Number(row["id"])
      const expected = recordedOf(id)
      if (expected === LONG_L || expected === SLASHES) expect(row["name"]).toBe(decodePartitionName(directories.get(expected)!.slice("name=".length)))
      else expect(row["name"], `row ${id}`).toBe(expected)
    }
    const [counts] = await duckRows(`SELECT count(*) FILTER (WHERE name IS NULL) AS nulls, count(*) FILTER (WHERE name = '${HIVE_DEFAULT}') AS literal
      FROM read_parquet('${dir}/**/*.parquet', hive_partitioning = true, hive_types = {'name': VARCHAR})`)
    expect(counts).toEqual({ nulls: String(ROWS / 5), literal: String(ROWS / 10) })

    const validate = await runCli(["validate", "--config", file])
    expect(validate.code, validate.stdout + validate.stderr).toBe(0)
    // A long value recorded otherwise than its bounded directory says fails validation.
    const manifestPath = path.join(dir, "manifest.json")
    fs.writeFileSync(manifestPath, fs.readFileSync(manifestPath, "utf8").replaceAll(`"name": "${LONG_L}"`, `"name": "${LONG_L.slice(1)}"`))
    const tampered = await runCli(["validate", "--config", file, "--export", "names"])
    expect(tampered.code).toBe(3)
    expect(tampered.stdout + tampered.stderr).toContain("ends with another value's hash")
  }, 120_000)

  it("four long partition columns: every directory within 255 bytes, all of them within 768, the key within S3's 1024 with room for a prefix", async () => {
    const { file, out } = configWith([
      { name: "four", query: "SELECT id, a, b, c, d FROM part_names", format: "ndjson", partition_by: ["a", "b", "c", "d"], out: "four" }
    ])
    const dir = out("four")
    const run = await runCli(["run", "-c", file])
    expect(run.code, run.stdout + run.stderr).toBe(0)
    const manifest = readManifest(dir)
    expect(manifest.parts.map((part) => part.partition).sort((x, y) => (String(x["c"]) < String(y["c"]) ? -1 : 1))).toEqual([
      { a: SLASHES, b: LONG_L, c: "Abc", d: "日".repeat(100) },
      { a: SLASHES, b: LONG_L, c: "abc", d: "日".repeat(100) }
    ])
    for (const part of manifest.parts) {
      const directories = path.dirname(part.path)
      expect(byteLength(directories) + 1).toBeLessThanOrEqual(768)
      // As an S3 key it leaves 150 bytes of the 1024 for a prefix.
      expect(byteLength(part.path)).toBeLessThanOrEqual(1024 - 150)
      for (const segment of directories.split("/")) expect(byteLength(segment)).toBeLessThanOrEqual(255)
    }
    const validate = await runCli(["validate", "--config", file])
    expect(validate.code, validate.stdout + validate.stderr).toBe(0)
  }, 60_000)

  it("chunked --resume: parts of the failed attempt keep their long values in the manifest (from the state store)", async () => {
    const { file, out } = configWith([
      {
        name: "names_resume",
        query: "SELECT id, name, 1 / (CASE WHEN broken THEN 0 ELSE 1 END) AS ok FROM part_names",
        format: "csv",
        mode: "chunked",
        chunk_column: "id",
        chunk_size: 500,
        partition_by: ["name"],
        out: "resume"
      }
    ])
    const dir = out("resume")
    await sql`UPDATE part_names SET broken = (id = 1700)`
    try {
      const first = await runCli(["run", "-c", file])
      expect(first.code).not.toBe(0)
      await sql`UPDATE part_names SET broken = false`
      const resumed = await runCli(["run", "-c", file, "--resume"])
      expect(resumed.code, resumed.stdout + resumed.stderr).toBe(0)
    } finally {
      await sql`UPDATE part_names SET broken = false`
    }
    const manifest = readManifest(dir)
    // The first attempt's chunks (ids 1–1500) came back from the state store with their values.
    const bounded = manifest.parts.filter((part) => part.path.includes("%7E"))
    expect(bounded.length).toBeGreaterThanOrEqual(2 * 4)
    await expectRecordedValues(dir, manifest, (file) => `read_csv('${file}', header = true)`)
    const validate = await runCli(["validate", "--config", file])
    expect(validate.code, validate.stdout + validate.stderr).toBe(0)
  }, 120_000)
})
