import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { adminConnection, noMysql, testMysqlUrl } from "../support/mysql.js"
import { testPgUrl } from "../support/pg.js"

// A run interrupted (SIGKILL) once it is journaled, then continued — by another `--worker` of the same run id, or by
// `rivet run --resume` — with configs that differ in one thing each. Another database, user, source type or format
// option is refused naming the difference; another password (the test server trusts every local login) or
// `--verbose` continues the run to a manifest. Each chunk's statement sleeps ~0.6 s so the first process is still
// running when it is killed (it is killed as soon as its run appears in the state).

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")
const TABLE = "ident_src"
const ROWS = 4_000
const CHUNK = 1_000

const pgUrl = new URL(testPgUrl())
const database = pgUrl.pathname.slice(1)
const copyDatabase = `${database}_copy`
const otherUser = `${database}_reader`
const urlWith = (change: (url: URL) => void): string => {
  const url = new URL(testPgUrl())
  change(url)
  return url.toString()
}

let sql: postgres.Sql
const dirs: Array<string> = []

const seed = (db: postgres.Sql) =>
  db.unsafe(`DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (id bigint PRIMARY KEY, label text NOT NULL);
    INSERT INTO ${TABLE} SELECT i, 'row ' || i FROM generate_series(1, ${ROWS}) AS i;
    CREATE OR REPLACE FUNCTION ident_slow(i bigint) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
      BEGIN IF i % ${CHUNK / 2} = 0 THEN PERFORM pg_sleep(0.3); END IF; RETURN i; END $$`)

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  await seed(sql)
  const [copy] = await sql`SELECT 1 FROM pg_database WHERE datname = ${copyDatabase}`
  if (copy === undefined) await sql.unsafe(`CREATE DATABASE "${copyDatabase}"`)
  const copySql = postgres(urlWith((url) => (url.pathname = `/${copyDatabase}`)), { max: 1, onnotice: () => {} })
  await seed(copySql)
  await copySql.end()
  await sql.unsafe(`DO $$ BEGIN CREATE ROLE "${otherUser}" LOGIN; EXCEPTION WHEN duplicate_object THEN NULL; END $$;
    GRANT SELECT ON ${TABLE} TO "${otherUser}"`)
  if (!noMysql()) {
    const my = await adminConnection()
    await my.query(`DROP TABLE IF EXISTS ${TABLE};
      CREATE TABLE ${TABLE} (id bigint PRIMARY KEY, label text NOT NULL);
      INSERT INTO ${TABLE} SELECT seq, CONCAT('row ', seq) FROM seq_1_to_${ROWS};
      DROP FUNCTION IF EXISTS ident_slow; CREATE FUNCTION ident_slow(i bigint) RETURNS bigint DETERMINISTIC RETURN i`)
    await my.end()
  }
}, 60_000)

afterAll(async () => {
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE}; DROP FUNCTION IF EXISTS ident_slow(bigint)`)
  await sql.unsafe(`DROP DATABASE IF EXISTS "${copyDatabase}" WITH (FORCE)`)
  await sql.unsafe(`DROP OWNED BY "${otherUser}"; DROP ROLE IF EXISTS "${otherUser}"`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** A fresh schema for the state of one test. */
const freshState = async (name: string) => {
  const schema = `rivet_ident_${name}_${process.pid}`
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`)
  return { schema, url: `${testPgUrl()}${testPgUrl().includes("?") ? "&" : "?"}search_path=${schema}` }
}

interface Variant {
  readonly source?: string
  readonly compression?: string
}

/** The export's config, writing to `out`; every variant reads the same query into the same destination. */
const configFor = (out: string, variant: Variant = {}): string => {
  const file = writeConfig(`source: ${variant.source ?? `{ type: postgres, url: "${testPgUrl()}" }`}
exports:
  - name: ident
    query: SELECT id, ident_slow(id) AS slow, label FROM ${TABLE}
    mode: chunked
    chunk_column: id
    chunk_size: ${CHUNK}
    parallel: 1
    chunk_checkpoint: true
    format: parquet
    compression: ${variant.compression ?? "zstd"}
    destination: { type: local, path: ${out} }
`)
  dirs.push(path.dirname(file))
  return file
}

/** Starts the CLI and SIGKILLs it as soon as its run is journaled in the state (`schema`). */
const journaledThenKilled = async (args: ReadonlyArray<string>, schema: string, env: Record<string, string>) => {
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "ignore", "pipe"]
  })
  let stderr = ""
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve))
  let running = false
  for (const until = Date.now() + 30_000; !running && child.exitCode === null && Date.now() < until; ) {
    await new Promise((resolve) => setTimeout(resolve, 25))
    const rows = await sql.unsafe(`SELECT 1 FROM ${schema}.rivet_runs WHERE status = 'running'`).catch(() => [])
    running = rows.length > 0
  }
  child.kill("SIGKILL")
  const code = await exited
  // A run that finished before the kill proves nothing about continuing an interrupted one.
  expect(code, stderr).toBeNull()
  expect(running, stderr).toBe(true)
}

/** The differing configs: each must be refused with the difference named. */
const refusedVariants = (): ReadonlyArray<{ readonly label: string; readonly variant: Variant; readonly names: string }> => [
  {
    label: "another database",
    variant: { source: `{ type: postgres, url: "${urlWith((url) => (url.pathname = `/${copyDatabase}`))}" }` },
    names: `source.database: run has ${database}, this config has ${copyDatabase}`
  },
  {
    label: "another user",
    variant: { source: `{ type: postgres, url: "${urlWith((url) => (url.username = otherUser))}" }` },
    names: `source.user: run has ${pgUrl.username}, this config has ${otherUser}`
  },
  { label: "another compression", variant: { compression: "none" }, names: "format.compression: run has zstd, this config has none" },
  ...(noMysql()
    ? []
    : [
        {
          label: "another source type",
          variant: { source: `{ type: mysql, url: "${testMysqlUrl()}" }` },
          names: "source.type: run has postgres, this config has mysql"
        }
      ])
]

/** Same database and user, another password (trust authentication accepts any) and a longer statement timeout. */
const samePlacePasswordChanged = (): Variant => ({
  source: `{ type: postgres, url: "${urlWith((url) => (url.password = "not-the-same-secret"))}", statement_timeout_s: 600 }`
})

const manifestRows = (out: string) =>
  (JSON.parse(fs.readFileSync(path.join(out, "manifest.json"), "utf8")) as { row_count: number; compression: string })

describe("a joined or resumed run must read the same source and write the same bytes", () => {
  it("--worker: refused for another database, user, source type or compression; another password and --verbose join", async () => {
    if (noMysql()) console.warn("run-identity: no MySQL server answered, so the source-type case (postgres vs mysql) did not run")
    const state = await freshState("join")
    const out = path.join(path.dirname(configFor("unused")), "out")
    // A short claim time to live: the accepted worker redoes the killed worker's claim after it expires.
    const env = { RIVET_STATE_URL: state.url, RIVET_LEASE_TTL: "3s" }
    const workerArgs = (config: string) => ["run", "-c", config, "--worker", "--run-id", "n1"]
    await journaledThenKilled(workerArgs(configFor(out)), state.schema, env)

    for (const { label, variant, names } of refusedVariants()) {
      const refused = await runCli(workerArgs(configFor(out, variant)), { env })
      expect(refused.code, `${label}: ${refused.stderr}`).toBe(1)
      expect(refused.stderr, label).toContain("this worker cannot join run 'ident_n1'")
      expect(refused.stderr, label).toContain(names)
      // Never the password, even of the config that differs.
      expect(refused.stderr, label).not.toContain("not-the-same-secret")
    }
    const joined = await runCli([...workerArgs(configFor(out, samePlacePasswordChanged())), "--verbose"], { env })
    expect(joined.code, joined.stderr).toBe(0)
    expect(joined.stderr).toContain("joined run 'ident_n1'")
    expect(manifestRows(out)).toMatchObject({ row_count: ROWS, compression: "zstd" })
    const [run] = await sql.unsafe(`SELECT status, run_identity FROM ${state.schema}.rivet_runs`)
    expect(run!["status"]).toBe("success")
    expect(String(run!["run_identity"])).not.toContain("not-the-same-secret")
  }, 120_000)

  it("--resume: refused for another database, user, source type or compression; another password and --verbose resume", async () => {
    const state = await freshState("resume")
    const out = path.join(path.dirname(configFor("unused")), "out")
    const env = { RIVET_STATE_URL: state.url }
    await journaledThenKilled(["run", "-c", configFor(out)], state.schema, env)

    for (const { label, variant, names } of refusedVariants()) {
      const refused = await runCli(["run", "-c", configFor(out, variant), "--resume"], { env })
      expect(refused.code, `${label}: ${refused.stderr}`).toBe(1)
      expect(refused.stderr, label).toMatch(/cannot resume run 'ident_\S+'/)
      expect(refused.stderr, label).toContain(names)
    }
    const resumed = await runCli(["run", "-c", configFor(out, samePlacePasswordChanged()), "--resume", "--verbose"], { env })
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stderr).toContain("resuming run 'ident_")
    expect(manifestRows(out)).toMatchObject({ row_count: ROWS, compression: "zstd" })
  }, 120_000)

  it("a run recorded before runs kept their identity is refused, saying why", async () => {
    const state = await freshState("legacy")
    const out = path.join(path.dirname(configFor("unused")), "out")
    const env = { RIVET_STATE_URL: state.url }
    await journaledThenKilled(["run", "-c", configFor(out)], state.schema, env)
    // What an earlier Rivet recorded: the same run without the identity column's value.
    await sql.unsafe(`UPDATE ${state.schema}.rivet_runs SET run_identity = NULL`)
    const refused = await runCli(["run", "-c", configFor(out), "--resume"], { env })
    expect(refused.code, refused.stderr).toBe(1)
    expect(refused.stderr).toContain("was recorded by an earlier Rivet that did not record its source and format options")
    expect(refused.stderr).toContain("rivet state reset")
  }, 60_000)
})
