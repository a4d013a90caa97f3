import { execFileSync, spawn } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import type { ContainerClient } from "@azure/storage-blob"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { AZURITE_KEY } from "./support/azurite.js"
import { adminClient, azuriteUrl, createContainer, uniqueName } from "./support/sink.js"

/**
 * Issue #6 acceptance: a rivet.yaml with `plugins:` naming this package's build runs end to end from the root CLI —
 * real PostgreSQL → CSV → block blobs in Azurite — and the manifest describes exactly the bytes that landed.
 */

const PACKAGE_DIR = path.resolve(import.meta.dirname, "..")
const REPO_ROOT = path.resolve(PACKAGE_DIR, "../..")
const CLI = path.join(REPO_ROOT, "bin", "rivet.js")
const PLUGIN_ENTRY = path.join(PACKAGE_DIR, "dist", "index.js")
const PG_URL = process.env["RIVET_TEST_PG_URL"] ?? "postgres://postgres@127.0.0.1:5432/test"
const TABLE = "azure_e2e_orders"
const ROWS = 30_000

const container = uniqueName("cli")
const tempDirs: Array<string> = []
let client: ContainerClient

/** The machine's own `node` (the first on PATH outside any node_modules/.bin), to run the CLI on it too. */
const machineNode = (): string => {
  for (const dir of (process.env["PATH"] ?? "").split(path.delimiter)) {
    if (dir === "" || dir.includes(`${path.sep}node_modules${path.sep}`)) continue
    const candidate = path.join(dir, "node")
    if (fs.existsSync(candidate)) return candidate
  }
  throw new Error("no node binary on PATH outside node_modules/.bin")
}

const runCli = (node: string, args: ReadonlyArray<string>, env: Record<string, string>) =>
  new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve, reject) => {
    const child = spawn(node, [CLI, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

const writeConfig = (prefix: string): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-azure-cli-"))
  tempDirs.push(dir)
  const file = path.join(dir, "rivet.yaml")
  fs.writeFileSync(
    file,
    `plugins: [${JSON.stringify(PLUGIN_ENTRY)}]
source:
  type: postgres
  url_env: AZURE_E2E_PG_URL
exports:
  - name: orders
    table: ${TABLE}
    format: csv
    destination:
      type: azure
      container: ${container}
      prefix: ${prefix}
      account_url: ${azuriteUrl()}
      account_key_env: AZURE_E2E_KEY
      block_size: 1MiB
`
  )
  return file
}

const download = async (name: string): Promise<Buffer> => client.getBlockBlobClient(name).downloadToBuffer()

const listNames = async (prefix: string): Promise<Array<string>> => {
  const names: Array<string> = []
  for await (const item of client.listBlobsFlat({ prefix })) names.push(item.name.slice(prefix.length))
  return names.sort()
}

const sha256 = (bytes: Uint8Array) => `sha256:${createHash("sha256").update(bytes).digest("hex")}`

beforeAll(async () => {
  expect(fs.existsSync(PLUGIN_ENTRY), `${PLUGIN_ENTRY} is missing: run npm run build in the package first`).toBe(true)
  expect(fs.existsSync(path.join(REPO_ROOT, "dist", "index.js")), "the repo root is not built: run npm run build there").toBe(true)
  await createContainer(container)
  client = adminClient().getContainerClient(container)
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(`
      DROP TABLE IF EXISTS ${TABLE};
      CREATE TABLE ${TABLE} (id int8 PRIMARY KEY, customer text, amount numeric(12,2), placed_at timestamptz);
      INSERT INTO ${TABLE}
      SELECT i, 'customer ' || i || ' «quoted, "comma"»', i * 1.25, timestamptz '2026-01-01 00:00:00.123456+00' + i * interval '1 minute'
      FROM generate_series(1, ${ROWS}) AS i;
    `)
  } finally {
    await sql.end({ timeout: 5 })
  }
}, 120_000)

afterAll(async () => {
  const sql = postgres(PG_URL, { max: 1, onnotice: () => {} })
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}`).finally(() => sql.end({ timeout: 5 }))
  for (const dir of tempDirs) fs.rmSync(dir, { recursive: true, force: true })
})

/**
 * The repo root's better-sqlite3 (the default state store) is a native addon built for the machine's Node when the
 * root was installed; the package's Node cannot load that build, so its run keeps state in PostgreSQL instead.
 */
const nodes = [
  { label: "the package's Node", binary: process.execPath, env: { RIVET_STATE_URL: PG_URL }, doctor: true },
  { label: "the machine's Node", binary: machineNode(), env: {}, doctor: false }
]

describe("rivet run with the azure plugin from the CLI", () => {
  for (const { label, binary, env: stateEnv, doctor: runDoctor } of nodes) {
    const version = execFileSync(binary, ["--version"], { encoding: "utf8" }).trim()

    it(`exports a PostgreSQL table to Azurite on ${label} (${version})`, async () => {
      const prefix = `run-${version}/`
      const config = writeConfig(prefix)
      const env = { AZURE_E2E_PG_URL: PG_URL, AZURE_E2E_KEY: AZURITE_KEY, ...stateEnv }

      // `rivet doctor` runs the sink's check (probe write) through the CLI; once is enough.
      const doctor = runDoctor ? await runCli(binary, ["doctor", "-c", config], env) : { code: 0, stdout: "", stderr: "" }
      expect(doctor.code, `${doctor.stdout}\n${doctor.stderr}`).toBe(0)

      const result = await runCli(binary, ["run", "-c", config], env)
      expect(result.code, `${result.stdout}\n${result.stderr}`).toBe(0)
      expect(`${result.stdout}${result.stderr}${doctor.stdout}${doctor.stderr}`).not.toContain(AZURITE_KEY)

      const names = await listNames(prefix)
      const parts = names.filter((name) => /^orders_\d{8}_\d{6}_\d{3}\.csv$/.test(name))
      const kept = names.filter((name) => /^_manifests\/orders_\d{8}T\d{6}\.\d{3}\.json$/.test(name))
      expect(names).toEqual([...parts, ...kept, "_SUCCESS", "manifest.json"].sort())
      expect(parts).toHaveLength(1)
      expect(kept).toHaveLength(1)

      const manifestBytes = await download(`${prefix}manifest.json`)
      expect(await download(`${prefix}${kept[0]}`)).toEqual(manifestBytes)
      const manifest = JSON.parse(manifestBytes.toString("utf8")) as {
        status: string
        row_count: number
        destination: { type: string; uri: string }
        parts: Array<{ path: string; rows: number; size_bytes: number; content_fingerprint: string }>
      }
      expect(manifest).toMatchObject({ status: "success", row_count: ROWS, destination: { type: "azure" } })
      expect(manifest.destination.uri).toBe(`${azuriteUrl()}/${container}/${prefix}`)
      expect(manifest.parts).toHaveLength(1)

      const part = manifest.parts[0]!
      expect(part.path).toBe(parts[0])
      const partBytes = await download(`${prefix}${part.path}`)
      // More than one 1 MiB block: the part went through stage/commit, not a single Put Blob.
      expect(partBytes.length).toBeGreaterThan(2 * 1024 ** 2)
      expect(part).toMatchObject({ rows: ROWS, size_bytes: partBytes.length, content_fingerprint: sha256(partBytes) })
      const lines = partBytes.toString("utf8").trimEnd().split("\n")
      expect(lines[0]).toBe("id,customer,amount,placed_at")
      expect(lines[1]).toBe('1,"customer 1 «quoted, ""comma""»",1.25,2026-01-01T00:01:00.123456Z')

      expect((await download(`${prefix}_SUCCESS`)).toString("utf8")).toBe(`${sha256(manifestBytes)}\n`)
      expect((await client.getBlockBlobClient(`${prefix}${part.path}`).getProperties()).contentType).toBe("text/csv; charset=utf-8")
    }, 180_000)
  }
})
