import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs/promises"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import mysql from "mysql2/promise"

/**
 * A MariaDB server the tests own: a fresh data directory (`mariadb-install-db`) and a `mariadbd` on a free loopback
 * port with the options a test needs and the machine's server lacks (a binary log for change data capture, TLS
 * certificates). ~5 s to start. This module reads no vitest state, so the global setup can use it too.
 */
export interface TestMariadb {
  /** `mysql://root@127.0.0.1:<port>/test` */
  readonly url: string
  readonly port: number
  readonly dataDir: string
  readonly stop: () => Promise<void>
}

const INSTALL_DB = "mariadb-install-db"
const SERVER = ["/usr/sbin/mariadbd", "/usr/bin/mariadbd", "/usr/local/bin/mariadbd"]

/** Why a test-owned server cannot start on this machine, or undefined when it can. */
export const cannotStartMariadb = async (): Promise<string | undefined> => {
  if (spawnSync(INSTALL_DB, ["--help"], { stdio: "ignore" }).error !== undefined) return `${INSTALL_DB} is not installed`
  return (await serverBinary()) === undefined ? `mariadbd is not in ${SERVER.join(", ")}` : undefined
}

const serverBinary = async () => {
  for (const candidate of SERVER) {
    const found = await fs.access(candidate).then(() => true, () => false)
    if (found) return candidate
  }
  return undefined
}

const freePort = () =>
  new Promise<number>((resolve, reject) => {
    const server = net.createServer()
    server.once("error", reject)
    server.listen(0, "127.0.0.1", () => {
      const address = server.address()
      server.close(() => (typeof address === "object" && address !== null ? resolve(address.port) : reject(new Error("no port"))))
    })
  })

const run = (command: string, args: ReadonlyArray<string>) =>
  new Promise<void>((resolve, reject) => {
    const child = spawn(command, args, { stdio: ["ignore", "pipe", "pipe"] })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()))
    child.once("error", reject)
    child.once("exit", (code) => (code === 0 ? resolve() : reject(new Error(`${command} exited ${code}: ${output.slice(-2000)}`))))
  })

const answers = async (url: string) => {
  try {
    const connection = await mysql.createConnection({ uri: url, connectTimeout: 1_000 })
    await connection.end()
    return true
  } catch {
    return false
  }
}

/**
 * Starts a MariaDB with `options` (mariadbd's own, e.g. `--log-bin=…`), a `test` database and root without a
 * password on 127.0.0.1. The data directory is removed by `stop`.
 */
export const startTestMariadb = async (options: ReadonlyArray<string> = []): Promise<TestMariadb> => {
  const binary = await serverBinary()
  if (binary === undefined) throw new Error(`mariadbd is not in ${SERVER.join(", ")}`)
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), "rivet-test-mariadb-"))
  const dataDir = path.join(dir, "data")
  const root = process.getuid?.() === 0 ? ["--user=root"] : []
  await run(INSTALL_DB, [
    "--no-defaults", `--datadir=${dataDir}`, ...root, "--auth-root-authentication-method=normal",
    "--skip-test-db", "--skip-name-resolve"
  ])
  const port = await freePort()
  const child = spawn(
    binary,
    [
      "--no-defaults", `--datadir=${dataDir}`, ...root, `--port=${port}`, "--bind-address=127.0.0.1",
      `--socket=${path.join(dir, "mariadbd.sock")}`, `--pid-file=${path.join(dir, "mariadbd.pid")}`,
      `--log-error=${path.join(dir, "error.log")}`, "--skip-name-resolve", "--innodb-buffer-pool-size=32M",
      "--innodb-log-file-size=16M", "--max-connections=200", ...options
    ],
    { stdio: "ignore", detached: false }
  )
  let exited: number | null | undefined
  child.once("exit", (code) => (exited = code))
  const stop = async () => {
    if (exited === undefined) {
      const gone = new Promise((resolve) => child.once("exit", resolve))
      child.kill("SIGTERM")
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 10_000))])
      if (exited === undefined) child.kill("SIGKILL")
    }
    await fs.rm(dir, { recursive: true, force: true })
  }
  const url = `mysql://root@127.0.0.1:${port}/test`
  const base = `mysql://root@127.0.0.1:${port}/mysql`
  const deadline = Date.now() + 30_000
  while (!(await answers(base))) {
    if (exited !== undefined || Date.now() > deadline) {
      const log = await fs.readFile(path.join(dir, "error.log"), "utf8").catch(() => "")
      await stop()
      throw new Error(`mariadbd did not start (${exited === undefined ? "no answer in 30 s" : `exit ${exited}`}): ${log.slice(-2000)}`)
    }
    await new Promise((resolve) => setTimeout(resolve, 200))
  }
  const connection = await mysql.createConnection({ uri: base })
  await connection.query("CREATE DATABASE IF NOT EXISTS test")
  await connection.end()
  return { url, port, dataDir, stop }
}

/** The binary log a change-data-capture test needs: row-based, full row images and metadata. */
export const BINLOG_OPTIONS = [
  "--log-bin=binlog", "--server-id=1", "--binlog-format=ROW", "--binlog-row-image=FULL", "--binlog-row-metadata=FULL"
] as const
