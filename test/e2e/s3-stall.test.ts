import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { S3TestServer } from "../support/s3/server.js"
import {
  configFile,
  expectCommitted,
  isolateAwsEnv,
  runLogged,
  s3Destination,
  serverEnv,
  startWithBucket,
  summaryRetries
} from "./s3-support.js"

// A stalled S3 request is bounded by the destination's request_timeout: it times out, is retried like any transient
// failure, and a stall that never ends fails the run (exit 2) instead of hanging it.
const BUCKET = "rivet-h2-stall"

let server: S3TestServer
let env: Record<string, string>

beforeAll(async () => {
  isolateAwsEnv()
  server = await startWithBucket(BUCKET)
  env = serverEnv(server)
})
afterAll(() => server?.stop())

/** 100,000 rows are ~7 MB of CSV: two 5MiB blocks, so a multipart upload; 100 rows are one PutObject. */
const queryOf = (rows: number) =>
  `SELECT i AS id, md5(i::text) AS h1, md5((i * 7)::text) AS h2 FROM generate_series(1, ${rows}) AS i`

const exportTo = (prefix: string, rows: number, extra: Readonly<Record<string, unknown>>) =>
  configFile([
    {
      name: "stalled",
      query: queryOf(rows),
      format: "csv",
      destination: s3Destination(server, BUCKET, { prefix, part_size: "5MiB", ...extra })
    }
  ])

const timed = async <A>(run: () => Promise<A>): Promise<A & { readonly ms: number }> => {
  const started = Date.now()
  const result = await run()
  return { ...result, ms: Date.now() - started }
}

describe("rivet run → s3: stalled requests", () => {
  afterEach(() => server.faults.clear())

  // A small object keeps this run short: a 5 MiB UploadPart body takes about a second more per attempt to stop
  // moving (the kernel keeps absorbing it), and that attempt is covered by the next test.
  it("an upload that stalls on every attempt times out after request_timeout each time, then the run exits 2", async () => {
    server.faults.add({ operation: "PutObject", respond: { stallMs: 60_000 } })
    const run = await timed(() => runLogged(server, ["run", "-c", exportTo("stall/always/", 100, { request_timeout: "1s" })], env))
    expect(run.code, run.stderr).toBe(2)
    expect(run.stderr).toMatch(
      new RegExp(`Error: S3 PutObject s3://${BUCKET}/stall/always/\\S+ failed: no bytes sent or received for 1s, the destination's request_timeout \\(TimeoutError\\)`)
    )
    expect(run.stderr).toContain("raise request_timeout on the destination (now 1s).")
    // The first attempt and the default policy's 5 retries, each abandoned by the client (status 0).
    const attempts = run.requests.filter((request) => request.operation === "PutObject")
    expect(attempts.map((request) => request.status)).toEqual([0, 0, 0, 0, 0, 0])
    for (let at = 1; at < attempts.length; at++) {
      // Each attempt waited out the 1 s timeout (plus a backoff) before the next one started.
      expect(attempts[at]!.at - attempts[at - 1]!.at).toBeGreaterThanOrEqual(1_000)
    }
    // Six 1 s timeouts plus ~6 s of backoff (~12 s idle, more on a loaded 2-core machine): the bound sits between
    // that and the 60 s a single attempt would take if request_timeout did not cut the stall.
    expect(run.ms).toBeLessThan(50_000)
    expect(await server.listObjects(BUCKET, "stall/always/")).toEqual([])
    expect(await server.listMultipartUploads(BUCKET)).toEqual([])
  })

  it("a part that stalls once is retried after request_timeout and the run succeeds with one retry", async () => {
    server.faults.add({ operation: "UploadPart", respond: { stallMs: 60_000 }, times: 1 })
    const run = await timed(() => runLogged(server, ["run", "-c", exportTo("stall/once/", 100_000, { request_timeout: "2s" })], env))
    expect(run.code, run.stderr).toBe(0)
    expect(summaryRetries(run.stderr)).toBe(1)
    const parts = run.requests.filter((request) => request.operation === "UploadPart")
    expect(parts.map((request) => request.status).sort()).toEqual([0, 200, 200])
    // The stalled block was sent again only once its 2 s timeout had passed.
    expect(parts[2]!.at - parts.find((request) => request.status === 0)!.at).toBeGreaterThanOrEqual(2_000)
    // One 2 s timeout and a retry: well under the 60 s stall that an uncut request would wait out, with room for
    // a loaded machine.
    expect(run.ms).toBeLessThan(50_000)
    const manifest = await expectCommitted(server, BUCKET, "stall/once/")
    expect(manifest.row_count).toBe(100_000)
    expect(await server.listMultipartUploads(BUCKET)).toEqual([])
  })
})
