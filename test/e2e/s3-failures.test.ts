import { createHash } from "node:crypto"
import postgres from "postgres"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import { testPgUrl } from "../support/pg.js"
import type { LoggedRequest, S3TestServer } from "../support/s3/server.js"
import {
  actWhen,
  configFile,
  countOf,
  expectCommitted,
  interruptWhen,
  isolateAwsEnv,
  runLogged,
  s3Destination,
  serverEnv,
  startWithBucket,
  summaryRetries,
  writeRequests
} from "./s3-support.js"

// What `rivet run` → s3 does when requests fail or the run is stopped: retries, exit codes, and nothing left behind.
const BUCKET = "rivet-e2e-s3-failures"

let server: S3TestServer
let env: Record<string, string>

beforeAll(async () => {
  isolateAwsEnv()
  server = await startWithBucket(BUCKET)
  env = serverEnv(server)
})
afterAll(() => server?.stop())

/** ~11 MB of CSV: three 5MiB blocks, so a multipart upload. */
const MEDIUM_ROWS = 150_000
const MEDIUM_QUERY = `SELECT i AS id, md5(i::text) AS h1, md5((i * 7)::text) AS h2 FROM generate_series(1, ${MEDIUM_ROWS}) AS i`

/** The advisory lock key that holds back the failing row of the abort-retry test. */
const ABORT_LOCK = 7_314_001

const csvExport = (prefix: string, query: string, extra: Readonly<Record<string, unknown>> = {}) =>
  configFile([
    { name: "hashes", query, format: "csv", destination: s3Destination(server, BUCKET, { prefix, part_size: "5MiB", ...extra }) }
  ])

/** Nothing under the prefix (no data object, no manifest.json, no _SUCCESS) and no multipart upload left open. */
const expectNothingLeft = async (prefix: string) => {
  expect(await server.listObjects(BUCKET, prefix)).toEqual([])
  expect(await server.listMultipartUploads(BUCKET)).toEqual([])
}

describe("rivet run → s3: retries and failures", () => {
  afterEach(() => server.faults.clear())

  it("retries a 503 on UploadPart and reports the retries in the summary", async () => {
    server.faults.add({ operation: "UploadPart", respond: { status: 503 }, times: 2 })
    const run = await runLogged(server, ["run", "-c", csvExport("retry/part/", MEDIUM_QUERY)], env)
    expect(run.stderr).toMatch(/status:\s+success/)
    expect(run.code).toBe(0)
    expect(countOf(run.requests, "UploadPart", 503)).toBe(2)
    expect(countOf(run.requests, "UploadPart", 200)).toBe(3)
    expect(summaryRetries(run.stderr)).toBe(2)

    const manifest = await expectCommitted(server, BUCKET, "retry/part/")
    expect(manifest.parts).toHaveLength(1)
    const text = new TextDecoder().decode(await server.getObject(BUCKET, `retry/part/${manifest.parts[0]!.path}`))
    const lines = text.split("\n")
    expect(lines).toHaveLength(MEDIUM_ROWS + 2)
    expect(lines[0]).toBe("id,h1,h2")
    expect(lines[MEDIUM_ROWS]).toBe(
      `${MEDIUM_ROWS},${createHash("md5").update(String(MEDIUM_ROWS)).digest("hex")},${createHash("md5").update(String(MEDIUM_ROWS * 7)).digest("hex")}`
    )
    expect(await server.listMultipartUploads(BUCKET)).toEqual([])
  })

  it("retries a 503 on PutObject and reports the retries in the summary", async () => {
    server.faults.add({ operation: "PutObject", respond: { status: 503 }, times: 2 })
    const query = "SELECT i AS id FROM generate_series(1, 100) AS i"
    const run = await runLogged(server, ["run", "-c", csvExport("retry/put/", query)], env)
    expect(run.stderr).toMatch(/status:\s+success/)
    expect(run.code).toBe(0)
    expect(countOf(run.requests, "PutObject", 503)).toBe(2)
    expect(summaryRetries(run.stderr)).toBe(2)
    const manifest = await expectCommitted(server, BUCKET, "retry/put/")
    expect(manifest.row_count).toBe(100)
  })

  it("when retries run out on a transient error the run exits 2 (try again later) and writes nothing", async () => {
    server.faults.add({ operation: "PutObject", respond: { status: 503 } })
    const query = "SELECT i AS id FROM generate_series(1, 100) AS i"
    const run = await runLogged(server, ["run", "-c", csvExport("retry/exhausted/", query)], env)
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("(HTTP 503)")
    // The first attempt and the default policy's 5 retries.
    expect(countOf(run.requests, "PutObject", 503)).toBe(6)
    expect(writeRequests(run.requests)).toHaveLength(6)
    await expectNothingLeft("retry/exhausted/")
  })

  it("a query failing mid-export aborts the multipart upload: no object, no markers, no open upload", async () => {
    // The division by zero comes when the cursor reaches row 300,000, ~78 MB of CSV in: far more than the pipeline
    // buffers, so by then parts must have been uploaded.
    const query = `SELECT i AS id, repeat(md5(i::text), 8) AS h, 1 / (300000 - i) AS boom FROM generate_series(1, 400000) AS i`
    const run = await runLogged(server, ["run", "-c", csvExport("fail/query/", query)], env)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("division by zero")
    expect(countOf(run.requests, "UploadPart", 200)).toBeGreaterThanOrEqual(1)
    expect(countOf(run.requests, "CompleteMultipartUpload")).toBe(0)
    expect(countOf(run.requests, "AbortMultipartUpload", 204)).toBe(1)
    await expectNothingLeft("fail/query/")
  })

  it.each([
    { s3Error: "AccessDenied", hint: "Check IAM policy. Rivet needs s3:PutObject and s3:GetBucketLocation.", prefix: "fail/part/" },
    {
      s3Error: "SignatureDoesNotMatch",
      hint: "Ensure region is set (even for MinIO, e.g. us-east-1), and that the secret key matches the access key.",
      prefix: "fail/signature/"
    }
  ] as const)("a permanent $s3Error on UploadPart fails fast: not retried, and the upload is aborted", async ({ hint, prefix, s3Error }) => {
    server.faults.add({ operation: "UploadPart", respond: { s3Error } })
    const run = await runLogged(server, ["run", "-c", csvExport(prefix, MEDIUM_QUERY, { upload_concurrency: 1 })], env)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain(`(${s3Error}, HTTP 403)`)
    expect(run.stderr).toContain(`Hint: ${hint}`)
    expect(writeRequests(run.requests).map((request) => `${request.operation} ${request.status}`)).toEqual([
      "CreateMultipartUpload 200",
      "UploadPart 403"
    ])
    const denied = run.requests.find((request) => request.operation === "UploadPart")!
    const abort = run.requests.find((request) => request.operation === "AbortMultipartUpload" && request.status === 204)!
    expect(abort).toBeDefined()
    expect(countOf(run.requests, "AbortMultipartUpload")).toBe(1)
    // No backoff before giving up: the retry budget would spend at least ~5 s (0.2 + 0.4 + … + 3.2 s, jittered).
    expect(abort.at - denied.at).toBeLessThan(2_000)
    await expectNothingLeft(prefix)
  })

  it("an abort that fails with a transient error is retried, so no multipart upload is left behind", async () => {
    server.faults.add({ operation: "AbortMultipartUpload", respond: { status: 503 }, times: 1 })
    // Row 140 000 of ~11 MB of CSV waits for an advisory lock that this test holds until the multipart upload has
    // begun, then divides by zero. Without the wait, a loaded machine could deliver the error while
    // CreateMultipartUpload is still in flight (a failing unit interrupts its writes rather than waiting for them).
    const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
    const lock = await sql.reserve()
    await lock`SELECT pg_advisory_lock(${ABORT_LOCK})`
    const query = `SELECT i AS id, md5(i::text) AS h1, md5((i * 7)::text) AS h2, 1 / CASE WHEN i < 140000 THEN 1 ELSE (SELECT 0 FROM pg_advisory_lock_shared(${ABORT_LOCK})) END AS boom FROM generate_series(1, ${MEDIUM_ROWS}) AS i`
    const began = (requests: ReadonlyArray<LoggedRequest>) => countOf(requests, "CreateMultipartUpload", 200) === 1
    const run = await actWhen(server, ["run", "-c", csvExport("fail/abort-retry/", query)], env, began, () =>
      lock`SELECT pg_advisory_unlock(${ABORT_LOCK})`
    ).finally(() => {
      lock.release()
      return sql.end()
    })
    expect(run.acted).toBe(true)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("division by zero")
    expect(countOf(run.requests, "CreateMultipartUpload", 200)).toBe(1)
    expect(countOf(run.requests, "AbortMultipartUpload", 503)).toBe(1)
    expect(countOf(run.requests, "AbortMultipartUpload", 204)).toBe(1)
    await expectNothingLeft("fail/abort-retry/")
  })

  it("a permanent error on CompleteMultipartUpload is not retried, and the upload is aborted", async () => {
    server.faults.add({ operation: "CompleteMultipartUpload", respond: { s3Error: "AccessDenied" } })
    const run = await runLogged(server, ["run", "-c", csvExport("fail/complete/", MEDIUM_QUERY)], env)
    expect(run.code).toBe(1)
    expect(run.stderr).toContain("CompleteMultipartUpload")
    expect(countOf(run.requests, "UploadPart", 200)).toBe(3)
    expect(countOf(run.requests, "CompleteMultipartUpload")).toBe(1)
    expect(countOf(run.requests, "AbortMultipartUpload", 204)).toBe(1)
    await expectNothingLeft("fail/complete/")
  })

  it("SIGINT during a multipart upload aborts it and exits 130", async () => {
    // Far more data than the run gets to upload before the signal.
    const query = "SELECT i AS id, repeat(md5(i::text), 8) AS h FROM generate_series(1, 3000000) AS i"
    const run = await interruptWhen(server, ["run", "-c", csvExport("interrupt/", query)], env, (requests) =>
      countOf(requests, "UploadPart", 200) >= 2
    )
    expect(run.interrupted).toBe(true)
    expect(run.code).toBe(130)
    expect(countOf(run.requests, "CompleteMultipartUpload")).toBe(0)
    // The upload is aborted once (204). The run's cleanup aborts it again, and finds it gone (404) — unless the
    // process exits first: a response cut by the exit is logged without a status (0), and so is the first abort's
    // when the signal lands while it is in flight. Either way no abort fails and none is left open.
    const aborts = run.requests.filter((request) => request.operation === "AbortMultipartUpload").map((request) => request.status)
    expect(aborts.filter((status) => status === 204 || status === 0).length).toBeGreaterThanOrEqual(1)
    expect(aborts.filter((status) => status === 204).length).toBeLessThanOrEqual(1)
    expect(aborts.filter((status) => status !== 204 && status !== 404 && status !== 0)).toEqual([])
    await expectNothingLeft("interrupt/")
  })
})
