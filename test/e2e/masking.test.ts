import { createHash, createHmac } from "node:crypto"
import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { Manifest } from "../../src/core/manifest.js"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import { dropSlots, logicalReplication } from "../support/replication.js"
import { duckRows, hiveScan, listFiles } from "./partition-support.js"
import { isolateAwsEnv, s3Destination, serverEnv, startWithBucket } from "./s3-support.js"
import { startOtlpReceiver } from "../support/otlp.js"

// Masks declared per column: every masked value equals the digest computed here, NULL stays NULL, `drop` removes the
// column, and no raw value of a masked column is in any byte written (data, manifests, stdout, stderr, --json).

const TABLE = "rivet_e2e_masked"
const KEY = "masking key for the e2e test, 48 bytes long....."
const hmac = (text: string) => createHmac("sha256", KEY).update(text, "utf8").digest("hex")
const sha = (text: string) => createHash("sha256").update(text, "utf8").digest("hex")
const logical = await logicalReplication(testPgUrl())

let sql: postgres.Sql
const dirs: Array<string> = []
const people = Array.from({ length: 40 }, (_, i) => ({
  id: i + 1,
  email: i % 10 === 3 ? null : `person${i}.masktest@example.org`,
  phone: `+1-555-01${String(i).padStart(2, "0")}-77`,
  card: `4929${String(1000_0000_0000 + i * 7919)}`,
  city: `Cityname${i % 5}x`,
  ssn: `SSN-${String(100_000 + i)}-Q`
}))
const rawValues = people.flatMap((p) => [p.email, p.phone, p.card, p.city, p.ssn]).filter((v): v is string => v !== null)

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}; CREATE TABLE ${TABLE} (id int PRIMARY KEY, email text, phone text, card text, city text, ssn text)`)
  await sql`INSERT INTO ${sql(TABLE)} ${sql(people)}`
})

afterAll(async () => {
  if (logical === undefined) await dropSlots(testPgUrl(), "rivet_e2e_masked")
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const configFor = (format: string, extra = "") => {
  const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
masking: { key_env: RIVET_E2E_MASK_KEY }
exports:
  - name: people
    table: ${TABLE}
    format: ${format}
    ${extra}
    columns:
      email: { mask: hmac_sha256 }
      phone: { mask: redact }
      card: { mask: last4 }
      city: { mask: hash_sha256 }
      ssn: { mask: drop }
    destination: { type: local, path: out }
`)
  dirs.push(path.dirname(file))
  return file
}

const expected = people.map((p) => ({
  id: String(p.id),
  email: p.email === null ? null : hmac(p.email),
  phone: null,
  card: `${"*".repeat(p.card.length - 4)}${p.card.slice(-4)}`,
  city: sha(p.city)
}))

/** Every byte under `dir` and the CLI's output, as latin1 text (a raw value in any encoding of ASCII shows). */
const everything = (dir: string, output: string) =>
  listFiles(dir)
    .map((file) => fs.readFileSync(path.join(dir, file)).toString("latin1"))
    .join("\n") + output

describe("masking", () => {
  it.each(["csv", "ndjson", "parquet"])("%s: masked values equal the digests computed here; no raw value is written anywhere", async (format) => {
    const config = configFor(format)
    const receiver = await startOtlpReceiver()
    const result = await runCli(["run", "-c", config, "--json", "--verbose"], {
      env: { RIVET_E2E_MASK_KEY: KEY, OTEL_EXPORTER_OTLP_ENDPOINT: receiver.endpoint }
    }).finally(() => receiver.close())
    expect(result.code, result.stderr).toBe(0)
    // The run's traces and metrics reached the receiver, and hold no raw value either.
    const telemetry = receiver.bodies().map(({ body }) => body).join("\n")
    expect(receiver.bodies().some(({ path }) => path === "/v1/traces")).toBe(true)
    expect(rawValues.filter((value) => telemetry.includes(value))).toEqual([])
    const out = path.join(path.dirname(config), "out")
    const rows = await duckRows(
      `SELECT * EXCLUDE (id), id::varchar AS id FROM ${hiveScan(format, out)} ORDER BY id::int`
    )
    expect(rows.map((row) => ({ id: row["id"], email: row["email"], phone: row["phone"] ?? null, card: row["card"], city: row["city"] }))).toEqual(expected)
    expect(Object.keys(rows[0]!)).not.toContain("ssn")
    const written = everything(path.dirname(config), result.stdout + result.stderr)
    expect(rawValues.filter((value) => written.includes(value))).toEqual([])
    const manifest = JSON.parse(fs.readFileSync(path.join(out, "manifest.json"), "utf8")) as Manifest
    expect(manifest.masked_columns).toEqual([
      { column: "email", method: "hmac_sha256", key_id: "default" },
      { column: "phone", method: "redact" },
      { column: "card", method: "last4" },
      { column: "city", method: "hash_sha256" },
      { column: "ssn", method: "drop" }
    ])
    expect(manifest.schema.map((column) => column.name)).toEqual(["id", "email", "phone", "card", "city"])
  }, 60_000)

  it("S3: the objects hold the digests and no raw value", async () => {
    isolateAwsEnv()
    const server = await startWithBucket("rivet-e2e-masked")
    try {
      const file = writeConfig(
        JSON.stringify({
          source: { type: "postgres", url: testPgUrl() },
          masking: { key_env: "RIVET_E2E_MASK_KEY" },
          exports: [
            {
              name: "people",
              table: TABLE,
              format: "ndjson",
              columns: { email: { mask: "hmac_sha256" }, phone: { mask: "redact" }, card: { mask: "last4" }, city: { mask: "hash_sha256" }, ssn: { mask: "drop" } },
              destination: s3Destination(server, "rivet-e2e-masked", { prefix: "people/" })
            }
          ]
        })
      )
      dirs.push(path.dirname(file))
      const result = await runCli(["run", "-c", file, "--json"], { env: { ...serverEnv(server), RIVET_E2E_MASK_KEY: KEY } })
      expect(result.code, result.stderr).toBe(0)
      const objects = await server.listObjects("rivet-e2e-masked", "people/")
      const bytes = (await Promise.all(objects.map((object) => server.getObject("rivet-e2e-masked", object.key))))
        .map((body) => Buffer.from(body).toString("latin1"))
        .join("\n")
      const rows = bytes
        .split("\n")
        .filter((line) => line.startsWith("{\"id\""))
        .map((line) => JSON.parse(line) as Record<string, unknown>)
        .sort((a, b) => Number(a["id"]) - Number(b["id"]))
      expect(rows.map((row) => ({ id: String(row["id"]), email: row["email"], phone: row["phone"], card: row["card"], city: row["city"] }))).toEqual(expected)
      expect(rawValues.filter((value) => (bytes + result.stdout + result.stderr).includes(value))).toEqual([])
    } finally {
      await server.stop()
    }
  }, 60_000)

  it("a rotated key is in the manifest: tokens of different key ids differ; unmasked CSV columns are byte for byte the unmasked export's", async () => {
    const rotating = (current: string) => {
      const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
masking: { keys: { v1: { key_env: MASK_V1 }, v2: { key_env: MASK_V2 } }, current: ${current} }
exports:
  - { name: people, table: ${TABLE}, format: csv, columns: { email: { mask: hmac_sha256 }, ssn: { mask: drop } }, allow_unmasked: [phone, card], destination: { type: local, path: out } }
`)
      dirs.push(path.dirname(file))
      return file
    }
    const env = { MASK_V1: KEY, MASK_V2: `${KEY}, rotated` }
    const tokens = async (current: string) => {
      const file = rotating(current)
      const result = await runCli(["run", "-c", file], { env })
      expect(result.code, result.stderr).toBe(0)
      const out = path.join(path.dirname(file), "out")
      const manifest = JSON.parse(fs.readFileSync(path.join(out, "manifest.json"), "utf8")) as Manifest
      const csv = fs.readFileSync(path.join(out, manifest.parts[0]!.path), "utf8")
      return { manifest, csv }
    }
    const v1 = await tokens("v1")
    const v2 = await tokens("v2")
    expect(v1.manifest.masked_columns?.[0]).toEqual({ column: "email", method: "hmac_sha256", key_id: "v1" })
    expect(v2.manifest.masked_columns?.[0]).toEqual({ column: "email", method: "hmac_sha256", key_id: "v2" })
    expect(v1.csv).toContain(hmac(people[0]!.email!))
    expect(v2.csv).not.toContain(hmac(people[0]!.email!))
    // Masked exports read typed rows instead of the server's CSV: every column not masked is written byte for byte
    // as the server-rendered CSV of an unmasked export writes it.
    const plainFile = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: people, query: "SELECT id, phone, card, city FROM ${TABLE}", format: csv, allow_unmasked: [phone, card], destination: { type: local, path: out } }
`)
    dirs.push(path.dirname(plainFile))
    expect((await runCli(["run", "-c", plainFile])).code).toBe(0)
    const plainOut = path.join(path.dirname(plainFile), "out")
    const plainManifest = JSON.parse(fs.readFileSync(path.join(plainOut, "manifest.json"), "utf8")) as Manifest
    const plain = fs.readFileSync(path.join(plainOut, plainManifest.parts[0]!.path), "utf8").trimEnd().split("\n")
    const unmaskedColumns = v1.csv.trimEnd().split("\n").map((line) => line.split(",").filter((_, i) => i !== 1).join(","))
    expect(unmaskedColumns).toEqual(plain)
  }, 60_000)

  it("a column that looks personal and is exported unmasked is a note, unless listed in allow_unmasked", async () => {
    const unmasked = (extra: string) => {
      const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - { name: people, table: ${TABLE}, format: csv, destination: { type: local, path: out }${extra} }
`)
      dirs.push(path.dirname(file))
      return file
    }
    const noted = await runCli(["plan", "-c", unmasked("")])
    expect(noted.stdout + noted.stderr).toContain("'email', 'phone', 'card', 'ssn' look personal and are exported unmasked")
    const allowed = await runCli(["plan", "-c", unmasked(", allow_unmasked: [email, phone, card, ssn]")])
    expect(allowed.code, allowed.stderr).toBe(0)
    expect(allowed.stdout + allowed.stderr).not.toContain("look personal")
  }, 60_000)

  it("chunked in a worker thread: the lane masks with the same key", async () => {
    // Rows read slowly (pg_sleep), so that the worker thread is up before this thread has run every chunk.
    const file = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
masking: { key_env: RIVET_E2E_MASK_KEY }
exports:
  - name: people
    query: "SELECT id, email, phone, card, city FROM ${TABLE} WHERE pg_sleep(0.04) IS NOT NULL"
    mode: chunked
    chunk_column: id
    chunk_size: 2
    parallel: 2
    format: csv
    columns: { email: { mask: hmac_sha256 }, phone: { mask: redact }, card: { mask: last4 }, city: { mask: hash_sha256 } }
    destination: { type: local, path: out }
`)
    dirs.push(path.dirname(file))
    const result = await runCli(["run", "-c", file], { env: { RIVET_E2E_MASK_KEY: KEY, RIVET_LANES: "1" } })
    expect(result.code, result.stderr).toBe(0)
    expect(result.stderr).toMatch(/chunks ran in 1 worker thread \([1-9]\d*\)/)
    const out = path.join(path.dirname(file), "out")
    const rows = await duckRows(`SELECT id::varchar AS id, email, phone, card, city FROM ${hiveScan("csv", out)} ORDER BY id::int`)
    expect(rows.map((row) => ({ ...row, phone: row["phone"] ?? null }))).toEqual(expected)
  }, 60_000)

  it("an unset or short key fails check and run naming the variable; a masked partition column is refused", async () => {
    const config = configFor("csv")
    const check = await runCli(["check", "-c", config], { env: { RIVET_E2E_MASK_KEY: "" } })
    expect(check.code).not.toBe(0)
    expect(check.stderr).toContain("RIVET_E2E_MASK_KEY")
    const shortCheck = await runCli(["check", "-c", config], { env: { RIVET_E2E_MASK_KEY: "short" } })
    expect(shortCheck.code).not.toBe(0)
    expect(shortCheck.stderr).toContain("masking.key_env (line 2): environment variable RIVET_E2E_MASK_KEY holds 5 bytes; a mask key needs at least 16")
    const short = await runCli(["run", "-c", config], { env: { RIVET_E2E_MASK_KEY: "short" } })
    expect(short.code).not.toBe(0)
    expect(short.stderr).toContain("environment variable RIVET_E2E_MASK_KEY holds 5 bytes; a mask key needs at least 16")
    expect(fs.existsSync(path.join(path.dirname(config), "out"))).toBe(false)
    const plan = await runCli(["plan", "-c", config], { env: { RIVET_E2E_MASK_KEY: KEY } })
    expect(plan.stdout).toMatch(/masks:\s+email hmac_sha256, phone redact, card last4, city hash_sha256, ssn drop/)
    const partitioned = await runCli(["check", "-c", configFor("csv", "partition_by: [city]")], { env: { RIVET_E2E_MASK_KEY: KEY } })
    expect(partitioned.stderr).toContain("column 'city' is masked, so it cannot be a partition_by column")
  }, 60_000)

  it.skipIf(logical !== undefined)("mode: cdc change rows are masked as snapshot rows are", async () => {
    const config = configFor("parquet", "mode: cdc\n    cdc: { slot: rivet_e2e_masked, publication: rivet_e2e_masked }")
    const env = { RIVET_E2E_MASK_KEY: KEY }
    expect((await runCli(["run", "-c", config], { env })).code).toBe(0)
    await sql.unsafe(`UPDATE ${TABLE} SET email = 'changed.masktest@example.org', card = '5555444433332222' WHERE id = 1`)
    const second = await runCli(["run", "-c", config, "--json"], { env })
    expect(second.code, second.stderr).toBe(0)
    const out = path.join(path.dirname(config), "out")
    const updates = await duckRows(`SELECT email, card FROM read_parquet('${out}/*.parquet') WHERE __op = 'update'`)
    expect(updates).toEqual([{ email: hmac("changed.masktest@example.org"), card: "************2222" }])
    const written = everything(path.dirname(config), second.stdout + second.stderr)
    expect(["changed.masktest@example.org", "5555444433332222", ...rawValues].filter((value) => written.includes(value))).toEqual([])
  }, 60_000)
})
