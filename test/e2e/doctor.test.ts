import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { S3TestServer } from "../support/s3/server.js"
import {
  configFile,
  countOf,
  isolateAwsEnv,
  runLogged,
  s3Destination,
  serverEnv,
  startWithBucket
} from "./s3-support.js"

// `rivet doctor -c` through the built CLI: its output is checked line by line, as users (and scripts) read it.
const BUCKET = "rivet-e2e-doctor"
const MISSING_BUCKET = "rivet-e2e-doctor-missing"
const HINT = "       Hint: "
const FAILED = "Some checks failed. Fix the issues above before running exports."

let server: S3TestServer
let env: Record<string, string>

beforeAll(async () => {
  isolateAwsEnv()
  server = await startWithBucket(BUCKET)
  env = serverEnv(server)
})
afterAll(() => server?.stop())
afterEach(() => server.faults.clear())

const doctorWith = async (destination: Readonly<Record<string, unknown>>, runEnv: Record<string, string> = env) => {
  const config = configFile([{ name: "probe", query: "SELECT 1 AS x", destination }])
  const run = await runLogged(server, ["doctor", "-c", config], runEnv)
  return { ...run, config, lines: run.stdout.split("\n") }
}

/** The lines from `[FAIL] <name>:` on: the failure and its hint line. */
const failureOf = (lines: ReadonlyArray<string>, name: string) => {
  const at = lines.findIndex((line) => line.startsWith(`[FAIL] ${name}: `))
  expect(at, `no '[FAIL] ${name}: ' line in:\n${lines.join("\n")}`).toBeGreaterThanOrEqual(0)
  return { line: lines[at]!, hint: lines[at + 1] ?? "" }
}

describe("rivet doctor", () => {
  it("a config error is `[FAIL] Config: <path>: message` with its hint, and nothing is contacted", async () => {
    const run = await doctorWith({ type: "s3", bucket: BUCKET, region: server.region, endpoint: server.endpoint, prefx: "x/" })
    const failure = failureOf(run.lines, "Config")
    expect(failure.line).toMatch(/^\[FAIL\] Config: exports\[0\]\.destination\.prefx( \(line \d+\))?: unknown key 'prefx'/)
    expect(failure.hint).toContain("prefix")
    expect(run.lines).toContain(FAILED)
    expect(run.code).toBe(1)
    expect(run.requests).toEqual([])
  })

  it("a reachable, writable bucket is `[OK]  Destination S3(<bucket>)`; the probe object is removed", async () => {
    const run = await doctorWith(s3Destination(server, BUCKET, { prefix: "doctor/" }))
    expect(run.lines).toEqual([
      `rivet doctor: checking config '${run.config}'`,
      "",
      "[OK]  Config parsed successfully",
      "[OK]  Source Postgres: not encrypted (no TLS settings)",
      "[OK]  Export probe",
      `[OK]  Destination S3(${BUCKET})`,
      "",
      "All checks passed.",
      ""
    ])
    expect(run.code).toBe(0)
    expect(run.requests.map((request) => `${request.operation} ${request.path} ${request.status}`)).toEqual([
      `GetBucketLocation /${BUCKET}/ 200`,
      `PutObject /${BUCKET}/doctor/.rivet_doctor_probe 200`,
      `DeleteObject /${BUCKET}/doctor/.rivet_doctor_probe 204`
    ])
    expect(await server.listObjects(BUCKET)).toEqual([])
  })

  it("a local destination is `[OK]  Destination Local(<path as written>)`", async () => {
    const run = await doctorWith({ type: "local", path: "out/doctor" })
    expect(run.lines).toContain("[OK]  Destination Local(out/doctor)")
    expect(run.lines.at(-2)).toBe("All checks passed.")
    expect(run.code).toBe(0)
  })

  it("a missing bucket fails with the NoSuchBucket message and the `aws s3 mb` hint", async () => {
    const run = await doctorWith(s3Destination(server, MISSING_BUCKET))
    const failure = failureOf(run.lines, `Destination S3(${MISSING_BUCKET})`)
    expect(failure.line).toMatch(
      new RegExp(`^\\[FAIL\\] Destination S3\\(${MISSING_BUCKET}\\): S3 GetBucketLocation s3://${MISSING_BUCKET}/ failed: .+ \\(NoSuchBucket, HTTP 404\\)$`)
    )
    expect(failure.hint).toBe(`${HINT}The bucket must already exist. Create it first: aws s3 mb s3://${MISSING_BUCKET}`)
    expect(run.lines.at(-2)).toBe(FAILED)
    expect(run.code).toBe(1)
    expect(countOf(run.requests, "PutObject")).toBe(0)
  })

  it("a wrong secret fails with SignatureDoesNotMatch and the region hint", async () => {
    const run = await doctorWith(s3Destination(server, BUCKET), { ...env, AWS_SECRET_ACCESS_KEY: "not-the-secret" })
    const failure = failureOf(run.lines, `Destination S3(${BUCKET})`)
    expect(failure.line).toMatch(
      new RegExp(`^\\[FAIL\\] Destination S3\\(${BUCKET}\\): S3 GetBucketLocation s3://${BUCKET}/ failed: .+ \\(SignatureDoesNotMatch, HTTP 403\\)$`)
    )
    expect(failure.hint).toBe(
      `${HINT}Ensure region is set (even for MinIO, e.g. us-east-1), and that the secret key matches the access key.`
    )
    expect(run.stdout).not.toContain(server.credentials.secretAccessKey)
    expect(run.code).toBe(1)
  })

  it("no write permission fails on the probe object with the IAM hint", async () => {
    server.faults.add({ operation: "PutObject", respond: { s3Error: "AccessDenied" } })
    const run = await doctorWith(s3Destination(server, BUCKET, { prefix: "doctor/" }))
    const failure = failureOf(run.lines, `Destination S3(${BUCKET})`)
    expect(failure.line).toMatch(
      new RegExp(`^\\[FAIL\\] Destination S3\\(${BUCKET}\\): S3 PutObject s3://${BUCKET}/doctor/\\.rivet_doctor_probe failed: .+ \\(AccessDenied, HTTP 403\\)$`)
    )
    expect(failure.hint).toBe(`${HINT}Check IAM policy. Rivet needs s3:PutObject and s3:GetBucketLocation.`)
    expect(run.code).toBe(1)
  })
})
