import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { isTlsProblem, resolveTls, sslOption, tlsFailure, type TlsSettings, withoutTlsParameters } from "../../../src/core/source/postgres-tls.js"

const settings = (value: ReturnType<typeof resolveTls>): TlsSettings => {
  if (value === undefined || isTlsProblem(value)) throw new Error(`expected settings, got ${JSON.stringify(value)}`)
  return value
}

describe("postgres TLS settings", () => {
  it("are absent when neither a block nor a URL parameter says anything", () => {
    expect(resolveTls({ query: "application_name=x" })).toBeUndefined()
  })

  it("take libpq's parameters from the URL, relative paths from the working directory", () => {
    const tls = settings(resolveTls({ query: "sslmode=verify-ca&sslrootcert=ca.pem", cwd: "/work" }))
    expect(tls).toMatchObject({ mode: "verify-ca", ca: { path: "/work/ca.pem" }, verifyChain: true, verifyHost: false })
    expect(withoutTlsParameters("sslmode=require&search_path=s&sslrootcert=x&sslcert=c&sslkey=k&sslpassword=p")).toBe("search_path=s")
  })

  it("resolve the block's paths against the config file's directory; verify-full is the default mode", () => {
    const tls = settings(resolveTls({ query: "", block: { ca_file: "certs/ca.pem" }, configDir: "/etc/rivet" }))
    expect(tls).toMatchObject({ mode: "verify-full", ca: { path: "/etc/rivet/certs/ca.pem", origin: "source.tls.ca_file" }, verifyHost: true })
    const lenient = settings(resolveTls({ query: "", block: { mode: "verify-full", accept_invalid_hostnames: true } }))
    expect(lenient).toMatchObject({ verifyChain: true, verifyHost: false })
  })

  it("refuse a block and URL parameters that disagree, naming both", () => {
    const mode = resolveTls({ query: "sslmode=require", block: { mode: "verify-full" } })
    expect(mode).toMatchObject({ message: "source.tls.mode is verify-full but the connection URL has sslmode=require" })
    const ca = resolveTls({ query: "sslrootcert=/a/ca.pem", block: { ca_file: "ca.pem" }, configDir: "/b" })
    expect(isTlsProblem(ca) && ca.message).toBe("source.tls.ca_file is /b/ca.pem but the connection URL has sslrootcert=/a/ca.pem")
    // The same file, written two ways, agrees.
    expect(isTlsProblem(resolveTls({ query: "sslrootcert=/b/ca.pem&sslmode=verify-full", block: { ca_file: "ca.pem", mode: "verify-full" }, configDir: "/b" }))).toBe(false)
    expect(resolveTls({ query: "sslmode=bogus" })).toMatchObject({ message: expect.stringContaining("not a libpq sslmode") })
    expect(resolveTls({ query: "sslcert=c.pem" })).toMatchObject({ message: expect.stringContaining("without its key") })
  })

  it("become postgres.js' ssl option; an unreadable file is named", () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-tls-unit-"))
    fs.writeFileSync(path.join(dir, "ca.pem"), "CA")
    try {
      expect(sslOption(settings(resolveTls({ query: "sslmode=disable" })))).toBe(false)
      expect(sslOption(settings(resolveTls({ query: "sslmode=require" })))).toEqual({ rejectUnauthorized: false })
      const full = sslOption(settings(resolveTls({ query: "", block: { ca_file: "ca.pem" }, configDir: dir })))
      expect(full).toEqual({ rejectUnauthorized: true, ca: Buffer.from("CA") })
      const ca = sslOption(settings(resolveTls({ query: "", block: { mode: "verify-ca", ca_file: "ca.pem" }, configDir: dir })))
      expect(ca).toMatchObject({ rejectUnauthorized: true, ca: Buffer.from("CA") })
      expect(typeof (ca as { checkServerIdentity?: unknown }).checkServerIdentity).toBe("function")
      // As libpq: require with a CA file checks the chain.
      expect(sslOption(settings(resolveTls({ query: `sslmode=require&sslrootcert=${dir}/ca.pem` })))).toMatchObject({ rejectUnauthorized: true })
      const missing = sslOption(settings(resolveTls({ query: "", block: { ca_file: "nope.pem" }, configDir: dir })))
      expect(missing).toMatchObject({ message: `cannot read the CA certificate file ${dir}/nope.pem (source.tls.ca_file): no such file` })
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("explain certificate failures, naming the CA file", () => {
    const tls = settings(resolveTls({ query: "", block: { ca_file: "/etc/ca.pem" } }))
    const unknown = Object.assign(new Error("self-signed certificate in certificate chain"), { code: "SELF_SIGNED_CERT_IN_CHAIN" })
    expect(tlsFailure(unknown, tls, "postgres://db:5432/x")?.message).toContain("the CA file /etc/ca.pem (source.tls.ca_file)")
    const expired = Object.assign(new Error("certificate has expired"), { code: "CERT_HAS_EXPIRED" })
    expect(tlsFailure(expired, tls, "postgres://db:5432/x")?.message).toContain("has expired")
    const host = Object.assign(new Error("Hostname/IP does not match"), { code: "ERR_TLS_CERT_ALTNAME_INVALID" })
    expect(tlsFailure(host, tls, "postgres://db:5432/x")?.hint).toContain("verify-ca")
    expect(tlsFailure(Object.assign(new Error("refused"), { code: "ECONNREFUSED" }), tls, "x")).toBeUndefined()
    expect(tlsFailure(unknown, undefined, "x")).toBeUndefined()
  })
})
