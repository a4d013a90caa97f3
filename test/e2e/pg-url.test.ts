import { randomBytes } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliResult, runCli } from "../support/cli.js"
import { dropLoginRole, loginRoleName, testPgUrl } from "../support/pg.js"

// A password holding every character a URL gives a meaning to. Each segment is distinct and random, so a fragment
// of the password anywhere (stderr, a DNS lookup, a connect) is found whatever it was split at.
const HEX = randomBytes(4).toString("hex")
const SEGMENTS = ["Ha", "Hb", "Hc", "Hd", "He", "Hf"].map((name) => `${name}${HEX}`)
const PASSWORD = `${SEGMENTS[0]}#${SEGMENTS[1]}@${SEGMENTS[2]}?${SEGMENTS[3]}%${SEGMENTS[4]}/${SEGMENTS[5]}`

const ROLE = loginRoleName("pgconn_symbols")
const SCHEMA = "pgconn_url"
const PRELOAD = pathToFileURL(path.resolve(import.meta.dirname, "../fixtures/net-audit-preload.mjs")).href
/** 63 bytes: PostgreSQL's longest identifier. */
const LONG_TABLE = `t${"x".repeat(61)}z`

let sql: postgres.Sql
let root: string
let base: URL

const urlWith = (password: string, host = `${base.hostname}:${base.port || "5432"}`) =>
  `postgres://${ROLE}:${password}@${host}${base.pathname}`

interface Audited extends CliResult {
  /** The DNS lookups and non-loopback connects the CLI made (test/fixtures/net-audit-preload.mjs). */
  readonly network: ReadonlyArray<{ kind: string; host: string }>
}

let runs = 0
const audited = async (args: ReadonlyArray<string>, env: Record<string, string> = {}): Promise<Audited> => {
  const audit = path.join(root, `audit-${++runs}.ndjson`)
  const result = await runCli(args, {
    cwd: root,
    env: { NODE_OPTIONS: `--import=${PRELOAD}`, RIVET_TEST_NET_AUDIT_FILE: audit, ...env }
  })
  const network = fs.existsSync(audit)
    ? fs.readFileSync(audit, "utf8").trim().split("\n").map((line) => JSON.parse(line) as { kind: string; host: string })
    : []
  return { ...result, network }
}

const config = (name: string, source: Record<string, unknown>, table = "src"): string => {
  const dir = path.join(root, name)
  fs.mkdirSync(dir, { recursive: true })
  const file = path.join(dir, "rivet.yaml")
  const document = {
    source: { type: "postgres", schema: SCHEMA, ...source },
    exports: [{ name: "src", table, format: "csv", destination: { type: "local", path: "out" } }]
  }
  fs.writeFileSync(file, JSON.stringify(document, null, 2))
  return file
}

const fragmentsIn = (text: string) => SEGMENTS.filter((segment) => text.includes(segment))

beforeAll(async () => {
  base = new URL(testPgUrl())
  root = fs.realpathSync(fs.mkdtempSync(path.join(os.tmpdir(), "rivet-pg-url-")))
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await sql.unsafe(`
    DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE;
    CREATE SCHEMA ${SCHEMA};
    CREATE TABLE ${SCHEMA}.src (id int PRIMARY KEY, label text NOT NULL);
    INSERT INTO ${SCHEMA}.src SELECT i, 'row ' || i FROM generate_series(1, 20) AS i;
    CREATE TABLE ${SCHEMA}.${LONG_TABLE} (id int PRIMARY KEY);
    INSERT INTO ${SCHEMA}.${LONG_TABLE} SELECT generate_series(1, 7);
    DO $$ BEGIN
      IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '${ROLE}') THEN CREATE ROLE ${ROLE}; END IF;
    END $$;
    ALTER ROLE ${ROLE} LOGIN PASSWORD '${PASSWORD}';
    GRANT USAGE ON SCHEMA ${SCHEMA} TO ${ROLE};
    GRANT SELECT ON ALL TABLES IN SCHEMA ${SCHEMA} TO ${ROLE};
  `)
}, 60_000)

afterAll(async () => {
  if (root) fs.rmSync(root, { recursive: true, force: true })
  await sql?.unsafe(`DROP SCHEMA IF EXISTS ${SCHEMA} CASCADE`)
  if (sql) await dropLoginRole(sql, ROLE)
  await sql?.end()
})

const csvRows = (file: string): number => {
  const dir = path.join(path.dirname(file), "out")
  const csv = (fs.readdirSync(dir, { recursive: true }) as Array<string>).filter((name) => name.endsWith(".csv"))
  expect(csv.length).toBeGreaterThan(0)
  return csv.reduce((sum, name) => sum + fs.readFileSync(path.join(dir, name), "utf8").trim().split("\n").length - 1, 0)
}

describe("connection URLs with #, @, ?, % and / in the password", () => {
  it("the audit preload sees a DNS lookup when one happens (so the checks below can fail)", async () => {
    const result = await audited(["run", "-c", config("control", { url: urlWith("x", "rivet-audit-control.invalid:5432") })])
    expect(result.code, result.stderr).not.toBe(0)
    expect(result.network.map((entry) => entry.host)).toContain("rivet-audit-control.invalid")
  })

  it("percent-encoded: connects and exports, with no DNS lookup or remote connect and no fragment printed", async () => {
    const file = config("encoded", { url: urlWith(encodeURIComponent(PASSWORD)) })
    const result = await audited(["run", "-c", file])
    expect(result.code, result.stderr).toBe(0)
    expect(csvRows(file)).toBe(20)
    expect(result.network).toEqual([])
    expect(fragmentsIn(result.stdout + result.stderr)).toEqual([])
  })

  it("percent-encoded in url_env and RIVET_STATE_URL: connects the same way", async () => {
    const file = config("encoded-env", { url_env: "PGCONN_URL" })
    // The state as the superuser (the role may not create tables), in the test's schema, through a URL parameter.
    const stateUrl = `postgres://postgres:${encodeURIComponent(PASSWORD)}@${base.host}${base.pathname}?search_path=${SCHEMA}`
    const result = await audited(["run", "-c", file], { PGCONN_URL: urlWith(encodeURIComponent(PASSWORD)), RIVET_STATE_URL: stateUrl })
    expect(result.code, result.stderr).toBe(0)
    expect(csvRows(file)).toBe(20)
    expect(result.network).toEqual([])
    expect(fragmentsIn(result.stdout + result.stderr)).toEqual([])
    const [state] = await sql.unsafe(`SELECT count(*)::int AS runs FROM ${SCHEMA}.rivet_runs`)
    expect(state?.["runs"]).toBe(1)
  })

  it("given by its parts (host, port, user, database) with the password from password_env or password_file: connects the same way", async () => {
    const parts = { host: base.hostname, port: Number(base.port || "5432"), user: ROLE, database: base.pathname.slice(1) }
    const fromEnv = config("parts-env", { ...parts, password_env: "PGCONN_PASSWORD" })
    const byEnv = await audited(["run", "-c", fromEnv], { PGCONN_PASSWORD: PASSWORD })
    expect(byEnv.code, byEnv.stderr).toBe(0)
    expect(csvRows(fromEnv)).toBe(20)
    const fromFile = config("parts-file", { ...parts, password_file: "password.txt" })
    fs.writeFileSync(path.join(path.dirname(fromFile), "password.txt"), `${PASSWORD}\n`)
    const byFile = await audited(["run", "-c", fromFile])
    expect(byFile.code, byFile.stderr).toBe(0)
    expect(csvRows(fromFile)).toBe(20)
    // An unknown database: the error names the masked address, never the password.
    const unknown = await audited(["run", "-c", config("parts-unknown", { ...parts, database: "no_such_db", password_env: "PGCONN_PASSWORD" })], {
      PGCONN_PASSWORD: PASSWORD
    })
    expect(unknown.code).not.toBe(0)
    expect(unknown.stderr).toContain("no_such_db")
    for (const result of [byEnv, byFile, unknown]) {
      expect(result.network).toEqual([])
      expect(fragmentsIn(result.stdout + result.stderr)).toEqual([])
    }
    // rivet check: a missing password file is an error naming the key, before anything runs.
    fs.rmSync(path.join(path.dirname(fromFile), "password.txt"))
    const check = await audited(["check", "-c", fromFile])
    expect(check.code).toBe(1)
    expect(check.stdout + check.stderr).toContain("source.password_file")
    // A password written in the config works, and rivet check warns about it without showing it.
    const plain = config("parts-plain", { ...parts, password: PASSWORD })
    const warned = await audited(["check", "-c", plain])
    expect(warned.code, warned.stdout + warned.stderr).toBe(0)
    expect(warned.stdout + warned.stderr).toMatch(/source\.password.*written in the config file/)
    expect(fragmentsIn(warned.stdout + warned.stderr)).toEqual([])
  })

  // Raw forms: the whole password, and one character at a time (each would be split differently by the driver).
  const rawPasswords = [PASSWORD, `${SEGMENTS[0]}#${SEGMENTS[1]}`, `${SEGMENTS[0]}@${SEGMENTS[1]}`, `${SEGMENTS[0]}?${SEGMENTS[1]}`, `${SEGMENTS[0]}/${SEGMENTS[1]}@${SEGMENTS[2]}`, `${SEGMENTS[0]}%${SEGMENTS[1]}`]

  it.each(rawPasswords.map((password) => [password.replace(/H[a-f][0-9a-f]+/g, "…"), password]))(
    "raw %s in source.url: refused at config load naming source.url and the fix; no lookup, no fragment",
    async (_label, password) => {
      const result = await audited(["run", "-c", config(`raw-url-${++runs}`, { url: urlWith(password) })])
      expect(result.code).toBe(1)
      expect(result.stderr).toMatch(/^Error: source\.url.*: /m)
      expect(result.stderr).toMatch(/percent-encode/)
      expect(result.stderr).toContain("%23")
      expect(fragmentsIn(result.stdout + result.stderr)).toEqual([])
      expect(result.network).toEqual([])
    }
  )

  it.each(rawPasswords.map((password) => [password.replace(/H[a-f][0-9a-f]+/g, "…"), password]))(
    "raw %s in url_env: refused before connecting, naming the variable; no lookup, no fragment",
    async (_label, password) => {
      const result = await audited(["run", "-c", config(`raw-env-${++runs}`, { url_env: "PGCONN_URL" })], { PGCONN_URL: urlWith(password) })
      expect(result.code).toBe(1)
      expect(result.stderr).toContain("environment variable PGCONN_URL (source.url_env)")
      expect(result.stderr).toMatch(/percent-encode/)
      expect(fragmentsIn(result.stdout + result.stderr)).toEqual([])
      expect(result.network).toEqual([])
    }
  )

  it("raw in RIVET_STATE_URL: refused naming the variable; no lookup, no fragment", async () => {
    const file = config("raw-state", { url: urlWith(encodeURIComponent(PASSWORD)) })
    const result = await audited(["run", "-c", file], { RIVET_STATE_URL: urlWith(PASSWORD) })
    expect(result.code).toBe(1)
    expect(result.stderr).toContain("RIVET_STATE_URL")
    expect(result.stderr).toMatch(/percent-encode/)
    expect(fragmentsIn(result.stdout + result.stderr)).toEqual([])
    expect(result.network).toEqual([])
  })
})

describe("identifier length", () => {
  it("a 63-byte table name is exported; 64 bytes is refused at config load naming the limit", async () => {
    const url = urlWith(encodeURIComponent(PASSWORD))
    const ok = config("long-63", { url }, LONG_TABLE)
    const exported = await runCli(["run", "-c", ok], { cwd: root })
    expect(exported.code, exported.stderr).toBe(0)
    expect(csvRows(ok)).toBe(7)
    // One byte more: PostgreSQL would cut it back to LONG_TABLE and export that table.
    const refused = await runCli(["run", "-c", config("long-64", { url }, `${LONG_TABLE}w`)], { cwd: root })
    expect(refused.code).toBe(1)
    expect(refused.stderr).toMatch(/^Error: exports\[0\]\.table.*is 64 bytes long: identifiers are at most 63 bytes/m)
  })
})
