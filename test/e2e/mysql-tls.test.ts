import * as fs from "node:fs"
import * as path from "node:path"
import mysql from "mysql2/promise"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CliResult, runCli } from "../support/cli.js"
import { cannotStartMariadb, startTestMariadb, type TestMariadb } from "../support/mariadb-server.js"
import { exportedRow, hasOpenssl, makeTestCertificates, tlsExportConfig } from "../support/tls-certs.js"

// TLS to MariaDB with a private CA, through the built CLI: a test-owned mariadbd started with a throw-away CA and
// server certificate (openssl), and a user that must present a client certificate (REQUIRE X509).

const unavailable = hasOpenssl ? await cannotStartMariadb() : "no openssl"
if (unavailable !== undefined) console.log(`mysql-tls: skipped (${unavailable})`)

const SSL_QUERY =
  "SELECT VARIABLE_VALUE AS ssl_version, CURRENT_USER() AS who FROM information_schema.SESSION_STATUS WHERE VARIABLE_NAME = 'SSL_VERSION'"

let server: TestMariadb | undefined
let root: string
let certs: string

const serverUrl = (host = "127.0.0.1", query = "", user = "root") =>
  `mysql://${user}@${host}:${server!.port}/test${query === "" ? "" : `?${query}`}`

const config = (source: Record<string, unknown>): string => tlsExportConfig(root, { type: "mysql", ...source }, SSL_QUERY)

/** The one row the export wrote: the session's TLS version and the account it runs as. */
const exported = (file: string): { version: string; who: string } => {
  const [version, who] = exportedRow(file)
  return { version: version ?? "", who: who ?? "" }
}

// Run from `root`, not the config's directory: block paths must resolve against the config file's directory.
const run = (file: string): Promise<CliResult> => runCli(["run", "-c", file], { cwd: root })
const expectOk = (result: CliResult) => expect(result.code, result.stderr + result.stdout).toBe(0)

beforeAll(async () => {
  if (unavailable !== undefined) return
  const made = makeTestCertificates("rivet-mysql-tls-")
  root = made.root
  certs = made.certs
  server = await startTestMariadb([
    `--ssl-ca=${path.join(certs, "ca.crt")}`,
    `--ssl-cert=${path.join(certs, "server.crt")}`,
    `--ssl-key=${path.join(certs, "server.key")}`
  ])
  const admin = await mysql.createConnection({ uri: serverUrl() })
  try {
    await admin.query("CREATE USER 'x509'@'%' REQUIRE X509")
    await admin.query("GRANT SELECT ON test.* TO 'x509'@'%'")
  } finally {
    await admin.end()
  }
}, 60_000)

afterAll(async () => {
  await server?.stop()
  if (root) fs.rmSync(root, { recursive: true, force: true })
})

describe.skipIf(unavailable !== undefined)("MariaDB over TLS with a private CA", () => {
  it("verify-ca with the right CA exports over TLS, in the tls block and as ssl-mode=VERIFY_CA&ssl-ca", async () => {
    const block = config({ url: serverUrl(), tls: { mode: "verify-ca", ca_file: "../certs/ca.crt" } })
    expectOk(await run(block))
    expect(exported(block).version).toMatch(/^TLSv1\.[23]$/)
    const url = config({ url: serverUrl("127.0.0.1", `ssl-mode=VERIFY_CA&ssl-ca=${path.join(certs, "ca.crt")}`) })
    expectOk(await run(url))
    expect(exported(url).version).toMatch(/^TLSv1\.[23]$/)
  })

  it("verify-full checks the host name: localhost passes, a name the certificate lacks is refused", async () => {
    const ok = config({ url: serverUrl("localhost", `ssl-mode=VERIFY_IDENTITY&ssl-ca=${path.join(certs, "ca.crt")}`) })
    expectOk(await run(ok))
    expect(exported(ok).version).toMatch(/^TLSv1/)
    // `127.1` reaches 127.0.0.1 but is a host name to TLS, and the certificate lists only localhost and 127.0.0.1.
    const refused = await run(config({ url: serverUrl("127.1"), tls: { mode: "verify-full", ca_file: "../certs/ca.crt" } }))
    expect(refused.code).not.toBe(0)
    expect(refused.stderr).toContain("is not valid for the host name dialled")
    const lenient = config({ url: serverUrl("127.1"), tls: { mode: "verify-full", ca_file: "../certs/ca.crt", accept_invalid_hostnames: true } })
    expectOk(await run(lenient))
  })

  it("the wrong CA is refused with a certificate error naming the CA file", async () => {
    const result = await run(config({ url: serverUrl(), tls: { mode: "verify-ca", ca_file: path.join(certs, "wrong-ca.crt") } }))
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain("is not signed by a CA trusted here")
    expect(result.stderr).toContain(path.join(certs, "wrong-ca.crt"))
    expect(result.stderr).toContain("source.tls.ca_file")
  })

  it("require without a CA is encrypted; disable is not", async () => {
    const required = config({ url: serverUrl("127.1", "ssl-mode=REQUIRED") })
    expectOk(await run(required))
    expect(exported(required).version).toMatch(/^TLSv1/)
    const plain = config({ url: serverUrl(), tls: { mode: "disable" } })
    expectOk(await run(plain))
    // An empty string, which CSV quotes (NULL would be an empty field).
    expect(exported(plain).version).toBe('""')
  })

  it("a client certificate (cert_file, key_file) is presented to a user created REQUIRE X509", async () => {
    const withoutCert = await run(config({ url: serverUrl("127.0.0.1", "", "x509"), tls: { mode: "require" } }))
    expect(withoutCert.code).not.toBe(0)
    const file = config({
      url: serverUrl("127.0.0.1", "", "x509"),
      tls: { ca_file: "../certs/ca.crt", cert_file: "../certs/client.crt", key_file: "../certs/client.key" }
    })
    expectOk(await run(file))
    const row = exported(file)
    expect(row.version).toMatch(/^TLSv1/)
    expect(row.who).toBe("x509@%")
  })

  it("a missing CA file fails naming it, and rivet check says so first", async () => {
    const missing = config({ url: serverUrl(), tls: { ca_file: "no-such-ca.crt" } })
    const result = await run(missing)
    expect(result.code).not.toBe(0)
    expect(result.stderr).toContain(`cannot read the CA certificate file ${path.join(path.dirname(missing), "no-such-ca.crt")} (source.tls.ca_file)`)
    const check = await runCli(["check", "-c", missing], { cwd: root })
    expect(check.code).not.toBe(0)
    expect(check.stdout + check.stderr).toContain("no-such-ca.crt")
    const disagree = await run(config({ url: serverUrl("127.0.0.1", "ssl-mode=REQUIRED"), tls: { mode: "verify-full" } }))
    expect(disagree.stderr).toContain("source.tls.mode is verify-full but the connection URL has ssl-mode=REQUIRED")
  })

  it("rivet doctor shows the TLS version, the mode and whether the certificate was verified", async () => {
    const result = await runCli(["doctor", "-c", config({ url: serverUrl("localhost"), tls: { ca_file: "../certs/ca.crt" } })], { cwd: root })
    expect(result.stdout).toMatch(/TLSv1\.[23]/)
    expect(result.stdout).toContain("verify-full")
    expect(result.stdout).toContain("certificate verified, host name checked")
  })
})
