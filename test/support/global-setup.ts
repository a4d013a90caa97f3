import * as fs from "node:fs/promises"
import * as os from "node:os"
import * as path from "node:path"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Scope from "effect/Scope"
import postgres from "postgres"
import type { TestProject } from "vitest/node"
import { startEmbeddedServer } from "../../src/embedded-postgres/server.js"
import { BINLOG_OPTIONS, cannotStartMariadb, startTestMariadb } from "./mariadb-server.js"
import { DEFAULT_MYSQL_URL, mysqlAnswers } from "./mysql-probe.js"
import { logicalReplication, slotsBeforeTests } from "./replication.js"

const DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/test"

const reachable = async (url: string): Promise<boolean> => {
  const sql = postgres(url, { max: 1, connect_timeout: 3, onnotice: () => {} })
  try {
    await sql`select 1`
    return true
  } catch {
    return false
  } finally {
    await sql.end({ timeout: 1 })
  }
}

const hostOf = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`
}

/**
 * Server settings of the test PostgreSQL beyond the defaults: logical replication for the change-data-capture tests
 * (`mode: cdc`, pgoutput). .ci/run sets the same on the machine's server.
 */
const TEST_SERVER_SETTINGS = { wal_level: "logical", max_replication_slots: "20", max_wal_senders: "20" } as const

/**
 * Starts an embedded PostgreSQL in a temporary directory with a `test` database, set up like a developer's test
 * server (trust authentication; fsync off, as the cluster is thrown away) with TEST_SERVER_SETTINGS. Returns its URL
 * and the teardown that stops the server and deletes the directory.
 */
const startEmbeddedForTests = async () => {
  const dataDir = await fs.mkdtemp(path.join(os.tmpdir(), "rivet-test-pg-"))
  const scope = Effect.runSync(Scope.make())
  const teardown = async () => {
    await Effect.runPromise(Scope.close(scope, Exit.void))
    await fs.rm(dataDir, { recursive: true, force: true })
  }
  const options = { dataDir, ephemeral: true, trust: true }
  // startEmbeddedServer takes no server settings, and wal_level needs a restart: the first start creates the cluster
  // and keeps the settings in it (ALTER SYSTEM writes postgresql.auto.conf) with the database; the second runs with them.
  const prepare = (url: string) =>
    Effect.promise(async () => {
      const sql = postgres(url, { max: 1, onnotice: () => {} })
      try {
        await sql`create database test`
        for (const [name, value] of Object.entries(TEST_SERVER_SETTINGS)) {
          await sql.unsafe(`ALTER SYSTEM SET ${name} = '${value}'`)
        }
      } finally {
        await sql.end()
      }
    })
  const started = await Effect.runPromiseExit(
    Effect.scoped(Effect.flatMap(startEmbeddedServer(options), (server) => prepare(server.url))).pipe(
      Effect.zipRight(startEmbeddedServer(options)),
      Scope.extend(scope)
    )
  )
  if (Exit.isFailure(started)) {
    await teardown()
    const error = Cause.squash(started.cause)
    const hint = typeof error === "object" && error !== null && "hint" in error ? `\nHint: ${String(error.hint)}` : ""
    throw new Error(`Could not start an embedded PostgreSQL for the tests: ${String(error)}${hint}`)
  }
  const url = new URL(started.value.url)
  url.pathname = "/test"
  return { url: url.toString(), version: started.value.version, port: started.value.port, teardown }
}

/**
 * Finds the PostgreSQL the tests use: RIVET_TEST_PG_URL when set (it must answer), else 127.0.0.1:5432, else an
 * embedded server started for this test run (RIVET_TEST_FORCE_EMBEDDED=1 skips the 5432 probe).
 * RIVET_TEST_STATE=postgres also keeps every run's state there (RIVET_STATE_URL, inherited by the test workers and
 * the CLIs they start) instead of SQLite files: scripts/test-node22.mjs runs Node 22 against a better-sqlite3
 * compiled for another Node.
 */
export default async function setup(project: TestProject) {
  const first = shared.rivetTestServices === undefined
  shared.rivetTestServices ??= findServices()
  const services = await shared.rivetTestServices
  project.provide("pgUrl", services.pgUrl)
  project.provide("mysqlUrl", services.mysqlUrl)
  project.provide("mysqlBinlogUrl", services.mysqlBinlogUrl)
  return first ? services.teardown : undefined
}

interface TestServices {
  readonly pgUrl: string
  readonly mysqlUrl: string
  readonly mysqlBinlogUrl: string
  readonly teardown: () => Promise<void>
}

/** The root config and each of its projects run this setup in the one vitest process: they share what the first found. */
const shared = globalThis as typeof globalThis & { rivetTestServices?: Promise<TestServices> }

const findServices = async (): Promise<TestServices> => {
  const found = await findPostgres()
  const noLogical = await logicalReplication(found.url)
  if (noLogical !== undefined) console.warn(`Logical replication (CDC) tests SKIPPED: ${noLogical}`)
  else {
    const slots = await slotsBeforeTests(found.url, "rivet_e2e_")
    if (slots !== undefined) console.log(slots)
  }
  const mysqlUrl = await findMysql()
  const binlog = await findBinlogMysql()
  const dropState = process.env["RIVET_TEST_STATE"] === "postgres" ? await keepStateIn(found.url) : undefined
  const teardown = async () => {
    await dropState?.()
    await binlog.teardown?.()
    await found.teardown?.()
  }
  return { pgUrl: found.url, mysqlUrl, mysqlBinlogUrl: binlog.url, teardown }
}

/** Points RIVET_STATE_URL at a schema of its own for this test run; returns what drops it again. */
const keepStateIn = async (url: string) => {
  const schema = `rivet_test_state_${process.pid}`
  const run = async (statement: string) => {
    const sql = postgres(url, { max: 1, onnotice: () => {} })
    await sql.unsafe(statement).finally(() => sql.end())
  }
  await run(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`)
  const stateUrl = new URL(url)
  stateUrl.searchParams.set("search_path", schema)
  process.env["RIVET_STATE_URL"] = stateUrl.toString()
  console.log(`Run state is kept in schema ${schema} of that PostgreSQL (RIVET_TEST_STATE=postgres)`)
  return () => run(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
}

const findPostgres = async (): Promise<{ url: string; teardown?: () => Promise<void> }> => {
  const explicit = process.env["RIVET_TEST_PG_URL"]
  if (explicit !== undefined) {
    if (!(await reachable(explicit))) {
      throw new Error(`PostgreSQL is not reachable at RIVET_TEST_PG_URL (${hostOf(explicit)})`)
    }
    console.log(`Tests use PostgreSQL at ${hostOf(explicit)} (RIVET_TEST_PG_URL)`)
    return { url: explicit }
  }
  const forceEmbedded = process.env["RIVET_TEST_FORCE_EMBEDDED"] === "1"
  if (!forceEmbedded && (await reachable(DEFAULT_PG_URL))) {
    console.log(`Tests use PostgreSQL at ${hostOf(DEFAULT_PG_URL)}`)
    return { url: DEFAULT_PG_URL }
  }
  const startedAt = Date.now()
  const embedded = await startEmbeddedForTests()
  const why = forceEmbedded ? "RIVET_TEST_FORCE_EMBEDDED=1" : `nothing answered at ${hostOf(DEFAULT_PG_URL)}`
  console.log(
    `Tests use an embedded PostgreSQL ${embedded.version} at 127.0.0.1:${embedded.port}/test ` +
      `(${why}; started in ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`
  )
  return { url: embedded.url, teardown: embedded.teardown }
}

/** The MySQL/MariaDB of the MySQL source tests (RIVET_TEST_MYSQL_URL, else the default), or "": tests skipped. */
const findMysql = async (): Promise<string> => {
  const url = process.env["RIVET_TEST_MYSQL_URL"] ?? DEFAULT_MYSQL_URL
  const where = url.replace(/^mysql:\/\/(?:[^@/]*@)?/, "")
  if (await mysqlAnswers(url)) {
    console.log(`Tests use MySQL at ${where}`)
    return url
  }
  console.warn(`MySQL source tests SKIPPED: no MySQL server answered at ${where} (set RIVET_TEST_MYSQL_URL)`)
  return ""
}

/**
 * The MariaDB with a row-based binary log of the MySQL change-data-capture tests: RIVET_TEST_MYSQL_BINLOG_URL when
 * set, else one started for this test run on a temporary data directory (the machine's server has no binary log);
 * "" when neither: those tests are skipped.
 */
const findBinlogMysql = async (): Promise<{ url: string; teardown?: () => Promise<void> }> => {
  const explicit = process.env["RIVET_TEST_MYSQL_BINLOG_URL"]
  if (explicit !== undefined) {
    console.log(`MySQL CDC tests use ${explicit.replace(/^mysql:\/\/(?:[^@/]*@)?/, "")} (RIVET_TEST_MYSQL_BINLOG_URL)`)
    return { url: explicit }
  }
  const why = await cannotStartMariadb()
  if (why !== undefined) {
    console.warn(`MySQL CDC tests SKIPPED: no server with a binary log (${why}; or set RIVET_TEST_MYSQL_BINLOG_URL)`)
    return { url: "" }
  }
  const startedAt = Date.now()
  try {
    const server = await startTestMariadb(BINLOG_OPTIONS)
    console.log(
      `MySQL CDC tests use a MariaDB with a binary log at 127.0.0.1:${server.port}/test ` +
        `(started in ${((Date.now() - startedAt) / 1000).toFixed(1)} s)`
    )
    return { url: server.url, teardown: server.stop }
  } catch (cause) {
    console.warn(`MySQL CDC tests SKIPPED: ${cause instanceof Error ? cause.message.split("\n")[0] : String(cause)}`)
    return { url: "" }
  }
}

declare module "vitest" {
  export interface ProvidedContext {
    pgUrl: string
    mysqlUrl: string
    mysqlBinlogUrl: string
  }
}
