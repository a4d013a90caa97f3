import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { isTlsProblem, type TlsSettings } from "../../../../src/core/source/tls.js"
import { mysqlTls, mysqlTlsFailure, resolveMysqlTls } from "../../../../src/plugins/sources/mysql/tls.js"
import { isUrlProblem, type MysqlAddress, parseMysqlUrl } from "../../../../src/plugins/sources/mysql/url.js"

const address = (url: string): MysqlAddress => {
  const parsed = parseMysqlUrl(url)
  if (isUrlProblem(parsed)) throw new Error(parsed.message)
  return parsed
}

const settings = (value: ReturnType<typeof resolveMysqlTls>): TlsSettings => {
  if (value === undefined || isTlsProblem(value)) throw new Error(`expected settings, got ${JSON.stringify(value)}`)
  return value
}

describe("mysql TLS settings", () => {
  it("are absent without ssl parameters or a block; PREFERRED asks for none", () => {
    expect(resolveMysqlTls(address("mysql://u@db/shop"), { configDir: "/etc" })).toBeUndefined()
    expect(settings(resolveMysqlTls(address("mysql://u@db/shop?ssl-mode=PREFERRED"), { configDir: "/etc" })).mode).toBe("prefer")
  })

  it("map ssl-mode, ssl-ca, ssl-cert and ssl-key onto the block's settings", () => {
    const tls = settings(
      resolveMysqlTls(address("mysql://u@db/shop?ssl-mode=VERIFY_IDENTITY&ssl-ca=/c/ca.pem&ssl-cert=/c/me.pem&ssl-key=/c/me.key"), { configDir: "/etc" })
    )
    expect(tls).toMatchObject({
      mode: "verify-full",
      modeOrigin: "ssl-mode in the connection URL",
      ca: { path: "/c/ca.pem", origin: "ssl-ca in the connection URL" },
      cert: { path: "/c/me.pem" },
      key: { path: "/c/me.key" },
      verifyChain: true,
      verifyHost: true
    })
    expect(settings(resolveMysqlTls(address("mysql://u@db/shop?ssl-mode=VERIFY_CA"), { configDir: "/" }))).toMatchObject({ verifyChain: true, verifyHost: false })
    expect(settings(resolveMysqlTls(address("mysql://u@db/shop?ssl-mode=REQUIRED"), { configDir: "/" }))).toMatchObject({ verifyChain: false })
  })

  it("take the block's paths from the config file's directory and refuse a disagreeing URL", () => {
    const tls = settings(resolveMysqlTls(address("mysql://u@db/shop"), { block: { ca_file: "ca.pem" }, configDir: "/etc/rivet" }))
    expect(tls).toMatchObject({ mode: "verify-full", ca: { path: "/etc/rivet/ca.pem", origin: "source.tls.ca_file" } })
    const disagree = resolveMysqlTls(address("mysql://u@db/shop?ssl-mode=REQUIRED"), { block: { mode: "verify-ca" }, configDir: "/" })
    expect(disagree).toMatchObject({ message: "source.tls.mode is verify-ca but the connection URL has ssl-mode=REQUIRED" })
    expect(parseMysqlUrl("mysql://u@db/shop?ssl-ca=")).toMatchObject({ message: "ssl-ca in the connection URL names no file" })
  })

  it("read the files through the FileSystem, naming a missing one and its key", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-mysql-tls-unit-"))
    try {
      fs.writeFileSync(path.join(dir, "ca.pem"), "PEM")
      const ok = await Effect.runPromise(mysqlTls(settings(resolveMysqlTls(address("mysql://u@db/shop"), { block: { ca_file: "ca.pem" }, configDir: dir }))))
      expect(ok.ssl).toMatchObject({ rejectUnauthorized: true, verifyIdentity: false })
      expect(Buffer.from(ok.ssl!.ca as Buffer).toString()).toBe("PEM")
      const missing = settings(resolveMysqlTls(address("mysql://u@db/shop"), { block: { ca_file: "gone.pem" }, configDir: dir }))
      const problem = await Effect.runPromise(Effect.flip(mysqlTls(missing)))
      expect(problem.message).toBe(`cannot read the CA certificate file ${path.join(dir, "gone.pem")} (source.tls.ca_file): no such file`)
    } finally {
      fs.rmSync(dir, { recursive: true, force: true })
    }
  })

  it("say which certificate failure mysql2's HANDSHAKE_SSL_ERROR was", () => {
    const tls = settings(resolveMysqlTls(address("mysql://u@db/shop"), { block: { ca_file: "ca.pem" }, configDir: "/etc" }))
    const cause = Object.assign(new Error("self-signed certificate in certificate chain"), { code: "HANDSHAKE_SSL_ERROR" })
    expect(mysqlTlsFailure(cause, tls, "mysql://u@db:3306/shop")?.message).toContain("is not signed by a CA trusted here, the CA file /etc/ca.pem")
    const noTls = Object.assign(new Error("Server does not support secure connection"), { code: "HANDSHAKE_NO_SSL_SUPPORT" })
    expect(mysqlTlsFailure(noTls, tls, "mysql://u@db:3306/shop")?.message).toContain("does not offer TLS")
  })
})
