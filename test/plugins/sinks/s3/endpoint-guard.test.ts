import { describe, expect, it } from "@effect/vitest"
import { checkEndpoint, displayEndpoint } from "../../../../src/plugins/sinks/s3/endpoint-guard.js"

const accepted = [
  "http://localhost:9000",
  "http://localhost",
  "https://localhost:9000/minio",
  "HTTP://LOCALHOST:9000",
  "http://LocalHost:9000/",
  "http://127.0.0.1:9000",
  "http://127.0.0.1",
  "http://127.1.2.3:4566",
  "http://127.255.255.254",
  "http://[::1]:9000",
  "http://[::1]",
  "http://[0:0:0:0:0:0:0:1]:9000",
  "http://user:secret@localhost:9000",
  "http://minio@127.0.0.1:9000/",
  "http://localhost:9000?x=1",
  "http://localhost:9000#frag"
]

const rejected = [
  "localhost:9000",
  "127.0.0.1:9000",
  "//localhost:9000",
  "ftp://localhost:9000",
  "file:///tmp/s3",
  "http://",
  "http://:9000",
  "http://127.evil.com",
  "http://localhost.evil.com",
  "http://localhost.",
  "http://127.0.0.1.nip.io",
  "http://0.0.0.0:9000",
  "http://10.0.0.5:9000",
  "http://192.168.1.10:9000",
  "http://172.16.0.1",
  "http://169.254.169.254",
  "http://128.0.0.1",
  "http://127.0.0.256",
  "http://127.0.0.01",
  "http://0127.0.0.1",
  "http://2130706433",
  "http://0x7f.0.0.1",
  "http://0x7f000001",
  "http://127.1",
  "http://127.0.1",
  "https://s3.amazonaws.com",
  "https://my-account.r2.cloudflarestorage.com",
  "https://s3.wasabisys.com",
  "http://[::ffff:127.0.0.1]:9000",
  "http://[::]:9000",
  "http://[::2]",
  "http://[fe80::1]",
  "http://::1:9000",
  "http://localhost:9000@evil.com",
  "http://evil.com#@localhost",
  "http://evil.com?@localhost",
  "http://evil.com/@localhost",
  "http://evil.com\\@localhost",
  "http://localhost\\@evil.com",
  "http://localhost:abc",
  "http://%6cocalhost:9000",
  " http://localhost:9000"
]

describe("checkEndpoint", () => {
  it.each(accepted)("accepts the loopback endpoint %s", (endpoint) => {
    expect(checkEndpoint(endpoint, false)).toEqual({ ok: true })
  })

  it.each(rejected)("rejects %s", (endpoint) => {
    const verdict = checkEndpoint(endpoint, false)
    expect(verdict.ok).toBe(false)
  })

  it.each(rejected)("allow_anonymous waives the guard for %s", (endpoint) => {
    expect(checkEndpoint(endpoint, true)).toEqual({ ok: true })
  })

  it("names the endpoint, the risk and what to do", () => {
    const verdict = checkEndpoint("https://s3.example.com:9000", false)
    if (verdict.ok) throw new Error("expected a rejection")
    expect(verdict.reason).toContain("'https://s3.example.com:9000'")
    expect(verdict.reason).toContain("non-loopback host 's3.example.com'")
    expect(verdict.reason).toContain("data-exfiltration / cleartext-credential risk")
    expect(verdict.reason).toContain("Drop `endpoint:` to use AWS S3")
    expect(verdict.reason).toContain("http://localhost:9000")
  })

  it("rejects a URL that a naive parser and WHATWG URL (used by the SDK) read differently", () => {
    // WHATWG URL treats "\\" as a path separator and connects to evil.com.
    expect(new URL("http://evil.com\\@localhost").hostname).toBe("evil.com")
    expect(checkEndpoint("http://evil.com\\@localhost", false).ok).toBe(false)
    // "010" is octal to WHATWG URL (127.0.0.8): only canonical decimal octets count.
    expect(new URL("http://127.0.0.010").hostname).toBe("127.0.0.8")
    expect(checkEndpoint("http://127.0.0.010", false).ok).toBe(false)
  })

  it("never echoes the password of an endpoint's userinfo", () => {
    const verdict = checkEndpoint("http://admin:hunter2@files.example.com", false)
    if (verdict.ok) throw new Error("expected a rejection")
    expect(verdict.reason).not.toContain("hunter2")
    expect(verdict.reason).toContain("http://***@files.example.com")
    expect(displayEndpoint("http://localhost:9000")).toBe("http://localhost:9000")
  })
})
