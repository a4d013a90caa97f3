import { afterAll, beforeAll, describe, expect, it } from "vitest"
import type { S3TestServer } from "../support/s3/server.js"
import {
  configFile,
  countOf,
  expectCommitted,
  isolateAwsEnv,
  noAmbientCredentials,
  runLogged,
  s3Destination,
  sha256Hex,
  startWithBucket
} from "./s3-support.js"

// The seed's contract: "Rivet needs s3:PutObject and s3:GetBucketLocation." A key allowed only those two runs and
// checks a destination; whatever it cannot do beyond them is a notice naming the permission, never a failure.
const BUCKET = "rivet-e2e-s3-permissions"
const MINIMAL = ["s3:PutObject", "s3:GetBucketLocation"]
const RECOMMENDED = [
  ...MINIMAL,
  "s3:GetObject",
  "s3:ListBucket",
  "s3:ListBucketMultipartUploads",
  "s3:AbortMultipartUpload",
  "s3:DeleteObject"
]
const KEYS = {
  minimal: { accessKeyId: "AKIARIVETMINIMAL0001", secretAccessKey: "minimal-secret", allow: MINIMAL },
  recommended: { accessKeyId: "AKIARIVETRECOMMENDED", secretAccessKey: "recommended-secret", allow: RECOMMENDED }
} as const

let server: S3TestServer

beforeAll(async () => {
  isolateAwsEnv()
  server = await startWithBucket(BUCKET, { extraCredentials: [KEYS.minimal, KEYS.recommended] })
})
afterAll(() => server?.stop())

const envFor = (key: keyof typeof KEYS): Record<string, string> => ({
  ...noAmbientCredentials(),
  AWS_ACCESS_KEY_ID: KEYS[key].accessKeyId,
  AWS_SECRET_ACCESS_KEY: KEYS[key].secretAccessKey
})

/** ~11 MB of CSV (a three-part multipart upload at 5 MiB parts) and a one-row export written with one PutObject. */
const exportsUnder = (prefix: string) => [
  {
    name: "hashes",
    query: "SELECT i AS id, md5(i::text) AS h1, md5((i * 7)::text) AS h2 FROM generate_series(1, 150000) AS i",
    format: "csv",
    destination: s3Destination(server, BUCKET, { prefix: `${prefix}hashes/`, part_size: "5MiB" })
  },
  {
    name: "tiny",
    query: "SELECT 1 AS id",
    format: "csv",
    destination: s3Destination(server, BUCKET, { prefix: `${prefix}tiny/` })
  }
]

const notices = (stderr: string): Array<string> => stderr.split("\n").filter((line) => /^rivet: export '[^']+': /.test(line))

/** Every notice that says a step was skipped for a missing permission. */
const skipped = (stderr: string): Array<string> =>
  notices(stderr).filter((line) => /not read back|could not check for multipart uploads|could not list|The credentials lack/.test(line))

const doctorLines = async (key: keyof typeof KEYS, prefix: string) => {
  const config = configFile([{ name: "probe", query: "SELECT 1 AS x", destination: s3Destination(server, BUCKET, { prefix }) }])
  const run = await runLogged(server, ["doctor", "-c", config], envFor(key))
  return { ...run, lines: run.stdout.split("\n") }
}

describe("S3 permissions: the seed's two are enough, the recommended set skips nothing", () => {
  it("rivet run with only s3:PutObject + s3:GetBucketLocation: exit 0, published, notices name what was skipped", async () => {
    const prefix = "minimal-run/"
    const run = await runLogged(server, ["run", "-c", configFile(exportsUnder(prefix))], envFor("minimal"))
    expect(run.code, run.stderr).toBe(0)
    // Read with the all-permission key: both exports published, every part as the manifest records it.
    const hashes = await expectCommitted(server, BUCKET, `${prefix}hashes/`)
    expect(hashes.row_count).toBe(150_000)
    expect((await expectCommitted(server, BUCKET, `${prefix}tiny/`)).row_count).toBe(1)
    expect(countOf(run.requests, "CompleteMultipartUpload", 200)).toBe(1)
    // Refused, each once per export where it was tried, and never retried: no write was refused.
    expect(run.requests.filter((r) => r.status === 403).map((r) => r.operation).sort()).toEqual(["GetObject", "GetObject", "ListMultipartUploads"])
    const said = notices(run.stderr)
    for (const name of ["hashes", "tiny"]) {
      const readBack = said.find((line) => line.startsWith(`rivet: export '${name}': manifest.json was not read back`))
      expect(readBack, run.stderr).toBeDefined()
      expect(readBack).toContain("s3:GetObject")
      expect(readBack).toContain("Skipped: the check that no other run published over it")
      // The PutObject response's x-amz-checksum-sha256 stands in for the read: it is the manifest's own SHA-256.
      const manifest = await server.getObject(BUCKET, `${prefix}${name}/manifest.json`)
      expect(readBack).toContain(`the write's response confirms the bytes stored (SHA-256 ${sha256Hex(manifest)})`)
    }
    const uploads = said.find((line) => line.includes("could not check for multipart uploads left open"))
    expect(uploads).toContain("s3:ListBucketMultipartUploads")
    expect(uploads).toContain("finding multipart uploads left open")
    expect(await server.listMultipartUploads(BUCKET)).toEqual([])
  }, 60_000)

  it("rivet run with the recommended permissions: exit 0, published, nothing refused and no skipped-step notice", async () => {
    const prefix = "recommended-run/"
    const run = await runLogged(server, ["run", "-c", configFile(exportsUnder(prefix))], envFor("recommended"))
    expect(run.code, run.stderr).toBe(0)
    await expectCommitted(server, BUCKET, `${prefix}hashes/`)
    await expectCommitted(server, BUCKET, `${prefix}tiny/`)
    expect(run.requests.filter((r) => r.status === 403)).toEqual([])
    expect(countOf(run.requests, "GetObject", 200)).toBe(2)
    expect(countOf(run.requests, "ListMultipartUploads", 200)).toBe(1)
    expect(skipped(run.stderr)).toEqual([])
  }, 60_000)

  it("rivet doctor with only the two: `[OK]  Destination S3(<bucket>)` unchanged, a note names s3:DeleteObject and the probe left", async () => {
    const run = await doctorLines("minimal", "doctor-minimal/")
    expect(run.code, run.stdout).toBe(0)
    const at = run.lines.indexOf(`[OK]  Destination S3(${BUCKET})`)
    expect(at, run.stdout).toBeGreaterThan(0)
    const note = run.lines[at + 1] ?? ""
    expect(note).toMatch(/^ {7}Note: the probe object s3:\/\/rivet-e2e-s3-permissions\/doctor-minimal\/\.rivet_doctor_probe was written but not removed/)
    expect(note).toContain("s3:DeleteObject")
    expect(note).toContain("Remove it by hand")
    expect(run.lines).toContain("All checks passed.")
    expect(run.requests.map((r) => `${r.operation} ${r.status}`)).toEqual(["GetBucketLocation 200", "PutObject 200", "DeleteObject 403"])
    expect((await server.listObjects(BUCKET, "doctor-minimal/")).map((o) => o.key)).toEqual(["doctor-minimal/.rivet_doctor_probe"])
  }, 30_000)

  it("rivet doctor with the recommended permissions: the seed's exact `[OK]` line, no note, the probe removed", async () => {
    const run = await doctorLines("recommended", "doctor-recommended/")
    expect(run.code, run.stdout).toBe(0)
    expect(run.lines.filter((line) => line.includes("Destination"))).toEqual([`[OK]  Destination S3(${BUCKET})`])
    expect(run.lines.filter((line) => line.includes("Note:"))).toEqual([])
    expect(await server.listObjects(BUCKET, "doctor-recommended/")).toEqual([])
  }, 30_000)
})
