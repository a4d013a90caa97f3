import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as net from "node:net"
import * as os from "node:os"
import * as path from "node:path"
import * as tls from "node:tls"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliResult, runCli } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import { exportedRow, hasOpenssl, makeCert, makeTestCertificates, tlsExportConfig } from "../support/tls-certs.js"

// TLS to PostgreSQL with a private CA, through the built CLI: a throw-away CA, server and client certificates made
// with openssl, the test server switched to ssl = on (ALTER SYSTEM + reload; other files' plain connections are not
// affected) and restored in afterAll.

const isRoot = process.getuid?.() === 0
const canRun = hasOpenssl && isRoot
if (!canRun) console.log(`pg-tls: skipped (${hasOpenssl ? "not root: cannot hand the server its certificate" : "no openssl"})`)

const SSL_QUERY = "SELECT ssl, version, coalesce(client_dn, '') AS client_dn FROM pg_stat_ssl WHERE pid = pg_backend_pid()"

let admin: postgres.Sql
let root: string
let certs: string
let serverDir: string
let base: URL
let altered = false

const serverUrl = (host = "127.0.0.1", query = "") =>
  `postgres://${base.username || "postgres"}@${host}:${base.port || "5432"}${base.pathname}${query === "" ? "" : `?${query}`}`

const config = (source: Record<string, unknown>): string => tlsExportConfig(root, { type: "postgres", ...source }, SSL_QUERY)

/** The one row the export wrote: `ssl,version,client_dn`. */
const exported = (file: string): { ssl: string; version: string; clientDn: string } => {
  const [ssl, version, clientDn] = exportedRow(file)
  return { ssl: ssl!, version: version!, clientDn: clientDn ?? "" }
}

// Run from `root`, not the config's directory: block paths must resolve against the config file's directory.
const run = (file: string, env: Record<string, string> = {}): Promise<CliResult> => runCli(["run", "-c", file], { cwd: root, env })

const expectOk = (result: CliResult) => expect(result.code, result.stderr + result.stdout).toBe(0)

beforeAll(async () => {
  if (!canRun) return
  base = new URL(testPgUrl())
  const made = makeTestCertificates("rivet-pg-tls-")
  root = made.root
  certs = made.certs
  makeCert(certs, "expired", "ca", "localhost", "DNS:localhost,IP:127.0.0.1", 0)
  // The server reads its files as the OS user postgres: a directory of its own, the key 0600.
  serverDir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-pg-tls-server-"))
  for (const name of ["server.crt", "server.key", "ca.crt"]) fs.copyFileSync(path.join(certs, name), path.join(serverDir, name))
  fs.chmodSync(path.join(serverDir, "server.key"), 0o600)
  for (const name of ["", "server.crt", "server.key", "ca.crt"]) spawnSync("chown", ["postgres", path.join(serverDir, name)])
  admin = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  altered = true
  await admin.unsafe(`ALTER SYSTEM SET ssl_cert_file = '${path.join(serverDir, "server.crt")}'`)
  await admin.unsafe(`ALTER SYSTEM SET ssl_key_file = '${path.join(serverDir, "server.key")}'`)
  await admin.unsafe(`ALTER SYSTEM SET ssl_ca_file = '${path.join(serverDir, "ca.crt")}'`)
  await admin.unsafe("ALTER SYSTEM SET ssl = on")
  await admin.unsafe("SELECT pg_reload_conf()")
  // The reload is asynchronous: wait until the server accepts TLS.
  const deadline = Date.now() + 10_000
  for (;;) {
    const probe = postgres(serverUrl(), { max: 1, ssl: { rejectUnauthorized: false }, connect_timeout: 2, onnotice: () => {} })
    try {
      await probe.unsafe("SELECT 1")
      break
    } catch (cause) {
      if (Date.now() > deadline) throw cause
      await new Promise((resolve) => setTimeout(resolve, 200))
    } finally {
      await probe.end({ timeout: 0 })
    }
  }
}, 60_000)

afterAll(async () => {
  if (!canRun) return
  try {
    if (altered) {
      for (const setting of ["ssl", "ssl_cert_file", "ssl_key_file", "ssl_ca_file"]) await admin.unsafe(`ALTER SYSTEM RESET ${setting}`)
      await admin.unsafe("SELECT pg_reload_conf()")
    }
  } finally {
    await admin?.end({ timeout: 5 })
    if (serverDir) fs.rmSync(serverDir, { recursive: true, force: true })
    if (root) fs.rmSync(root, { recursive: true, force: true })
  }
})

describe.skipIf(!canRun)("PostgreSQL over TLS with a private CA", () => {
  it("verify-full with the right CA (tls block, path relative to the config file) exports over TLS", async () => {
    const file = config({ url: serverUrl(), tls: { mode: "verify-full", ca_file: "../certs/ca.crt" } })
    expectOk(await run(file))
    const row = exported(file)
    expect(row.ssl).toBe("true")
    expect(row.version).toMatch(/^TLSv1\.[23]$/)
  })

  it("verify-full with the right CA in the URL (sslmode, sslrootcert) exports over TLS", async () => {
    const file = config({ url: serverUrl("localhost", `sslmode=verify-full&sslrootcert=${path.join(certs, "ca.crt")}`) })
    expectOk(await run(file))
    expect(exported(file).ssl).toBe("true")
  })

  it("the wrong CA is refused with a certificate error naming the CA file", async () => {
    const file = config({ url: serverUrl(), tls: { mode: "verify-full", ca_file: path.join(certs, "wrong-ca.crt") } })
    const result = await run(file)
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("is not signed by a CA trusted here")
    expect(result.stderr).toContain(path.join(certs, "wrong-ca.crt"))
    expect(result.stderr).toContain("source.tls.ca_file")
  })

  it("a host name the certificate lacks is refused under verify-full; accept_invalid_hostnames and verify-ca accept it", async () => {
    // `127.1` reaches 127.0.0.1 but is a host name to TLS, and the certificate lists only localhost and 127.0.0.1.
    const ca = path.join(certs, "ca.crt")
    const refused = await run(config({ url: serverUrl("127.1"), tls: { mode: "verify-full", ca_file: ca } }))
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("is not valid for the host name dialled")
    expect(refused.stderr).toContain("verify-ca")

    const lenient = config({ url: serverUrl("127.1"), tls: { mode: "verify-full", ca_file: ca, accept_invalid_hostnames: true } })
    expectOk(await run(lenient))
    expect(exported(lenient).ssl).toBe("true")
    const verifyCa = config({ url: serverUrl("127.1", `sslmode=verify-ca&sslrootcert=${ca}`) })
    expectOk(await run(verifyCa))
    expect(exported(verifyCa).ssl).toBe("true")
    // verify-ca still checks the chain.
    const wrong = await run(config({ url: serverUrl("127.1"), tls: { mode: "verify-ca", ca_file: path.join(certs, "wrong-ca.crt") } }))
    expect(wrong.code).not.toBe(0)
    expect(wrong.stderr).toContain("wrong-ca.crt")
  })

  it("require without a CA is encrypted", async () => {
    const file = config({ url: serverUrl("127.1", "sslmode=require") })
    expectOk(await run(file))
    expect(exported(file).ssl).toBe("true")
  })

  it("a client certificate (cert_file, key_file) is presented to the server", async () => {
    const file = config({
      url: serverUrl(),
      tls: { ca_file: "../certs/ca.crt", cert_file: "../certs/client.crt", key_file: "../certs/client.key" }
    })
    expectOk(await run(file))
    const row = exported(file)
    expect(row.ssl).toBe("true")
    expect(row.clientDn).toContain("CN=rivet-client")
  })

  it("a tls block and URL parameters that disagree, and a missing CA file, are refused naming both", async () => {
    const disagree = await run(config({ url: serverUrl("127.0.0.1", "sslmode=require"), tls: { mode: "verify-full" } }))
    expect(disagree.code).not.toBe(0)
    expect(disagree.stderr).toContain("source.tls.mode is verify-full but the connection URL has sslmode=require")

    const missing = config({ url: serverUrl(), tls: { ca_file: "no-such-ca.crt" } })
    const result = await run(missing)
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain(`cannot read the CA certificate file ${path.join(path.dirname(missing), "no-such-ca.crt")}`)
    const check = await runCli(["check", "-c", missing], { cwd: root })
    expect(check.code).not.toBe(0)
    expect(check.stdout + check.stderr).toContain("no-such-ca.crt")
  })

  it("the state store connects over verify-full with RIVET_STATE_URL's sslrootcert; the wrong CA is refused", async () => {
    const file = config({ url: serverUrl(), tls: { mode: "require" } })
    const stateUrl = (ca: string) => serverUrl("localhost", `sslmode=verify-full&sslrootcert=${path.join(certs, ca)}`)
    expectOk(await run(file, { RIVET_STATE_URL: stateUrl("ca.crt") }))
    const refused = await run(file, { RIVET_STATE_URL: stateUrl("wrong-ca.crt") })
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("RIVET_STATE_URL")
    expect(refused.stderr).toContain("wrong-ca.crt")
  })

  it("rivet doctor shows the TLS version, the mode and whether the certificate was verified", async () => {
    const file = config({ url: serverUrl(), tls: { ca_file: "../certs/ca.crt" } })
    const result = await runCli(["doctor", "-c", file], { cwd: root })
    expect(result.stdout).toMatch(/TLSv1\.[23]/)
    expect(result.stdout).toContain("verify-full")
    expect(result.stdout).toContain("certificate verified")
  })

  it("an expired server certificate is refused, saying so", async () => {
    // A server that accepts the SSLRequest and shows a certificate from the right CA that has expired.
    const context = { cert: fs.readFileSync(path.join(certs, "expired.crt")), key: fs.readFileSync(path.join(certs, "expired.key")) }
    const fake = net.createServer((socket) => {
      socket.on("error", () => {})
      socket.once("data", () => {
        socket.write("S")
        new tls.TLSSocket(socket, { isServer: true, ...context }).on("error", () => {})
      })
    })
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve))
    try {
      const port = (fake.address() as net.AddressInfo).port
      const url = `postgres://postgres@127.0.0.1:${port}/test`
      const result = await run(config({ url, tls: { mode: "verify-full", ca_file: "../certs/ca.crt" } }))
      expect(result.code).not.toBe(0)
      expect(result.stderr).toContain("has expired (CERT_HAS_EXPIRED)")
      expect(result.stderr).toContain(path.join(certs, "ca.crt"))
    } finally {
      fake.close()
    }
  })

  it("a server that does not start TLS is refused under require, saying so", async () => {
    // Answers the SSLRequest with 'N' and closes on the TLS handshake that follows, as a server with ssl = off does.
    const fake = net.createServer((socket) => {
      socket.on("error", () => {})
      socket.once("data", () => {
        socket.write("N")
        socket.once("data", () => socket.end())
      })
    })
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve))
    try {
      const port = (fake.address() as net.AddressInfo).port
      const result = await run(config({ url: `postgres://postgres@127.0.0.1:${port}/test?sslmode=require` }))
      expect(result.code).not.toBe(0)
      expect(result.stderr).toContain("closed the connection instead of starting TLS")
      expect(result.stderr).toContain("ssl = off")
    } finally {
      fake.close()
    }
  })
})
