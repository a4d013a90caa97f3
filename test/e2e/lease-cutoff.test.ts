import { type ChildProcess, spawn } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as path from "node:path"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"

// A run holding an export's lease stays alive but loses the state database: its state connections go through a proxy
// that the test partitions (bytes and new connections are held, as a network partition without resets would), so its
// heartbeats hang. A second run with `--wait` takes the lease over once it expires. It must say that the holder
// stopped renewing (and may still be alive), with the retryable exit code. When the partition heals, the holder's
// renewal finds the lease lost and it stops without publishing anything; `--resume` then finishes the run.

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")
const TABLE = "cutoff_src"
const ROWS = 5_000
const CHUNK = 1_000

const schema = `rivet_cutoff_${process.pid}`

let sql: postgres.Sql
const dirs: Array<string> = []

beforeAll(async () => {
  sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  // Each chunk's statement sleeps 1.5 s (5 chunks), so the holder is still running when it is cut off, even when the
  // second run is slow to start on a loaded machine.
  await sql.unsafe(`DROP TABLE IF EXISTS ${TABLE};
    CREATE TABLE ${TABLE} (id bigint PRIMARY KEY, label text NOT NULL);
    INSERT INTO ${TABLE} SELECT i, 'row ' || i FROM generate_series(1, ${ROWS}) AS i;
    CREATE OR REPLACE FUNCTION cutoff_slow(i bigint) RETURNS bigint LANGUAGE plpgsql STABLE AS $$
      BEGIN IF i % ${CHUNK} = 0 THEN PERFORM pg_sleep(1.5); END IF; RETURN i; END $$;
    DROP SCHEMA IF EXISTS ${schema} CASCADE;
    CREATE SCHEMA ${schema}`)
}, 60_000)

afterAll(async () => {
  await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE; DROP TABLE IF EXISTS ${TABLE}; DROP FUNCTION IF EXISTS cutoff_slow(bigint)`)
  await sql.end()
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

const stateUrl = (port?: number) => {
  const url = new URL(testPgUrl())
  if (port !== undefined) {
    url.hostname = "127.0.0.1"
    url.port = String(port)
  }
  url.searchParams.set("search_path", schema)
  return url.toString()
}

/** A TCP proxy to the test server that can be partitioned: while cut, bytes and new connections wait for `heal`. */
const partitionableProxy = async () => {
  const target = new URL(testPgUrl())
  let cut = false
  const held: Array<() => void> = []
  const sockets = new Set<net.Socket>()
  const relay = (from: net.Socket, to: net.Socket) =>
    from.on("data", (chunk: Buffer) => (cut ? held.push(() => to.write(chunk)) : to.write(chunk)))
  const server = net.createServer((client) => {
    sockets.add(client)
    // Until `open`, nothing reads the client: its bytes wait in the socket.
    const open = () => {
      const upstream = net.connect(Number(target.port || 5432), target.hostname)
      sockets.add(upstream)
      relay(client, upstream)
      relay(upstream, client)
      const close = () => {
        client.destroy()
        upstream.destroy()
      }
      client.on("close", close).on("error", close)
      upstream.on("close", close).on("error", close)
    }
    if (cut) held.push(open)
    else open()
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  return {
    port: (server.address() as net.AddressInfo).port,
    cut: () => void (cut = true),
    heal: () => {
      cut = false
      for (const step of held.splice(0)) step()
    },
    close: async () => {
      for (const socket of sockets) socket.destroy()
      await new Promise((resolve) => server.close(resolve))
    }
  }
}

const start = (args: ReadonlyArray<string>, env: Record<string, string>) => {
  const child: ChildProcess = spawn(process.execPath, [BIN, ...args], { env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "pipe"] })
  let stderr = ""
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const exited = new Promise<number | null>((resolve) => child.on("close", resolve))
  return { child, stderr: () => stderr, exited }
}

/** The process's exit code, or a failure with its stderr when it has not exited within `timeoutMs`. */
const exitOf = async (run: ReturnType<typeof start>, what: string, timeoutMs = 45_000) => {
  let timer: ReturnType<typeof setTimeout> | undefined
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not exit within ${timeoutMs / 1000} s; its stderr:\n${run.stderr()}`)), timeoutMs)
  })
  try {
    return await Promise.race([run.exited, late])
  } finally {
    clearTimeout(timer)
  }
}

const until = async (what: string, check: () => Promise<boolean>, timeoutMs = 30_000) => {
  for (const end = Date.now() + timeoutMs; Date.now() < end; ) {
    if (await check()) return
    await new Promise((resolve) => setTimeout(resolve, 50))
  }
  throw new Error(`timed out waiting for ${what}`)
}

describe("a lease holder cut off from the state database", () => {
  it("the run that takes its expired lease over says it stopped renewing (exit 2); the holder publishes nothing; --resume finishes", async () => {
    const config = writeConfig(`source: { type: postgres, url: "${testPgUrl()}" }
exports:
  - name: cutoff
    query: SELECT id, cutoff_slow(id) AS slow, label FROM ${TABLE}
    mode: chunked
    chunk_column: id
    chunk_size: ${CHUNK}
    parallel: 1
    chunk_checkpoint: true
    format: csv
    destination: { type: local, path: out }
`)
    dirs.push(path.dirname(config))
    const out = path.join(path.dirname(config), "out")
    const ttl = { RIVET_LEASE_TTL: "3s" }
    const proxy = await partitionableProxy()
    const started: Array<ReturnType<typeof start>> = []
    try {
      const holder = start(["run", "-c", config], { ...ttl, RIVET_STATE_URL: stateUrl(proxy.port) })
      started.push(holder)
      await until("the holder's run to be journaled", async () => {
        const rows = await sql.unsafe(`SELECT 1 FROM ${schema}.rivet_runs WHERE status = 'running'`).catch(() => [])
        return rows.length > 0 || holder.child.exitCode !== null
      })
      expect(holder.child.exitCode, holder.stderr()).toBeNull()

      const waiting = start(["run", "-c", config, "--wait", "60s"], { ...ttl, RIVET_STATE_URL: stateUrl() })
      started.push(waiting)
      await until("the second run to wait for the lease", async () => waiting.stderr().includes("waiting up to"))
      proxy.cut()

      const code = await exitOf(waiting, "the run waiting for the lease")
      // The holder is alive all along: its heartbeat and its chunk's commit wait on the partitioned connections.
      expect(holder.child.exitCode, holder.stderr()).toBeNull()
      expect(waiting.stderr()).toContain("took over the expired lease")
      expect(waiting.stderr()).toContain("stopped renewing the export's lease")
      expect(waiting.stderr()).toContain("may still be running, cut off from the state store")
      expect(waiting.stderr()).not.toContain("killed or crashed")
      expect(code, waiting.stderr()).toBe(2)

      // The partition heals: the holder's renewal finds the lease gone, and it stops without publishing.
      proxy.heal()
      const holderCode = await exitOf(holder, "the holder")
      expect(holderCode, holder.stderr()).toBe(2)
      expect(holder.stderr()).toContain("lost the lease on export 'cutoff'")
      expect(fs.existsSync(path.join(out, "manifest.json"))).toBe(false)
      expect(fs.existsSync(path.join(out, "_SUCCESS"))).toBe(false)
    } finally {
      // A failed expectation must not leave a process holding locks that afterAll's DROP SCHEMA would wait on.
      for (const run of started) if (run.child.exitCode === null) run.child.kill("SIGKILL")
      proxy.heal()
      await proxy.close()
    }

    // Nothing is lost: --resume continues the run to its manifest.
    const resumed = await runCli(["run", "-c", config, "--resume"], { env: { ...ttl, RIVET_STATE_URL: stateUrl() } })
    expect(resumed.code, resumed.stderr).toBe(0)
    const manifest = JSON.parse(fs.readFileSync(path.join(out, "manifest.json"), "utf8")) as { row_count: number }
    expect(manifest.row_count).toBe(ROWS)
  }, 120_000)
})
