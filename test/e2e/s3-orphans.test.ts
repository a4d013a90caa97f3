import { spawn } from "node:child_process"
import * as path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { S3TestServer } from "../support/s3/server.js"
import {
  configFile,
  countOf,
  expectCommitted,
  isolateAwsEnv,
  type LoggedRequest,
  runLogged,
  s3Destination,
  serverEnv,
  startWithBucket
} from "./s3-support.js"

// No multipart upload outlives a run: not when S3 created one whose response was lost, nor when the run is stopped
// while CreateMultipartUpload is in flight.
const BUCKET = "rivet-e2e-s3-orphans"

let server: S3TestServer
let env: Record<string, string>

beforeAll(async () => {
  isolateAwsEnv()
  server = await startWithBucket(BUCKET)
  env = serverEnv(server)
})
afterAll(() => server?.stop())
afterEach(() => server.faults.clear())

/** ~11 MB of CSV: three 5 MiB blocks, so one multipart upload. */
const ROWS = 150_000
const QUERY = `SELECT i AS id, md5(i::text) AS h1, md5((i * 7)::text) AS h2 FROM generate_series(1, ${ROWS}) AS i`

const openUploads = async (prefix: string) =>
  (await server.listMultipartUploads(BUCKET)).filter((upload) => upload.key.startsWith(prefix))

/** The CSV rows of every part the manifest lists, header lines dropped, in manifest order. */
const exportedIds = async (prefix: string): Promise<Array<number>> => {
  const manifest = await expectCommitted(server, BUCKET, prefix)
  const ids: Array<number> = []
  for (const part of manifest.parts) {
    const lines = new TextDecoder().decode(await server.getObject(BUCKET, `${prefix}${part.path}`)).split("\n")
    for (const line of lines.slice(1)) if (line !== "") ids.push(Number(line.split(",")[0]))
  }
  return ids
}

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")

/** Runs the built CLI and sends it `signal` once `ready` resolves true (polled every 20 ms). */
const signalWhen = (
  args: ReadonlyArray<string>,
  signal: NodeJS.Signals,
  ready: () => Promise<boolean>,
  extraEnv: Record<string, string> = {}
) =>
  new Promise<{ code: number | null; stderr: string; signalled: boolean; requests: ReadonlyArray<LoggedRequest> }>(
    (resolve, reject) => {
      const before = server.requests().length
      const child = spawn(process.execPath, [BIN, ...args], {
        env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...env, ...extraEnv },
        stdio: ["ignore", "ignore", "pipe"]
      })
      let stderr = ""
      let signalled = false
      let done = false
      child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
      const poll = async () => {
        while (!done && !signalled) {
          if (await ready()) {
            signalled = true
            child.kill(signal)
            return
          }
          await new Promise((wake) => setTimeout(wake, 20))
        }
      }
      poll().catch(reject)
      child.on("error", reject)
      child.on("close", (code) => {
        done = true
        resolve({ code, stderr, signalled, requests: server.requests().slice(before) })
      })
    }
  )

describe("rivet run → s3: no orphan multipart uploads", () => {
  it.each([
    { name: "reset after S3 created the upload", respond: { resetAfterWork: true } as const, timeout: undefined },
    // The client's idle timeout (1 s) fires while the front end holds the response, so the request is retried.
    { name: "held until the request times out", respond: { delayResponseMs: 4_000 } as const, timeout: "1s" }
  ])("a lost CreateMultipartUpload response ($name): retried, exit 0, exact data, no open upload", async ({ name, respond, timeout }) => {
    const prefix = `lost-create/${name.split(" ")[0]}/`
    server.faults.add({ operation: "CreateMultipartUpload", respond, times: 1 })
    const config = configFile([
      {
        name: "hashes",
        query: QUERY,
        format: "csv",
        destination: s3Destination(server, BUCKET, { prefix, part_size: "5MiB", ...(timeout ? { request_timeout: timeout } : {}) })
      }
    ])
    const run = await runLogged(server, ["run", "-c", config], env)
    expect(run.stderr).toMatch(/status:\s+success/)
    expect(run.code).toBe(0)
    // The first upload was created (its response lost), the retry created the one that completed.
    expect(run.requests.filter((r) => r.operation === "CreateMultipartUpload").map((r) => r.status)).toEqual([0, 200])
    expect(countOf(run.requests, "CompleteMultipartUpload", 200)).toBe(1)
    expect(countOf(run.requests, "AbortMultipartUpload", 204)).toBe(1)
    expect(countOf(run.requests, "ListMultipartUploads", 200)).toBeGreaterThanOrEqual(1)
    expect(await openUploads(prefix)).toEqual([])
    const ids = await exportedIds(prefix)
    expect(ids).toHaveLength(ROWS)
    expect(ids.every((id, index) => id === index + 1)).toBe(true)
  })

  it("a listing refused (AccessDenied) does not fail a published run: a notice names the permission", async () => {
    const prefix = "lost-create/denied-listing/"
    server.faults.add({ operation: "CreateMultipartUpload", respond: { resetAfterWork: true }, times: 1 })
    server.faults.add({ operation: "ListMultipartUploads", respond: { s3Error: "AccessDenied" } })
    const config = configFile([
      { name: "hashes", query: QUERY, format: "csv", destination: s3Destination(server, BUCKET, { prefix, part_size: "5MiB" }) }
    ])
    const run = await runLogged(server, ["run", "-c", config], env)
    expect(run.code).toBe(0)
    expect(run.stderr).toContain("could not check for multipart uploads left open")
    expect(run.stderr).toContain("s3:ListBucketMultipartUploads")
    await expectCommitted(server, BUCKET, prefix)
    // Without the listing the lost upload stays open (under this test's prefix only).
    expect(await openUploads(prefix)).toHaveLength(1)
  })

  it("a transient error on ListMultipartUploads is retried like any request", async () => {
    const prefix = "lost-create/list-retry/"
    server.faults.add({ operation: "CreateMultipartUpload", respond: { resetAfterWork: true }, times: 1 })
    server.faults.add({ operation: "ListMultipartUploads", respond: { status: 503 }, times: 1 })
    const config = configFile([
      { name: "hashes", query: QUERY, format: "csv", destination: s3Destination(server, BUCKET, { prefix, part_size: "5MiB" }) }
    ])
    const run = await runLogged(server, ["run", "-c", config], env)
    expect(run.code).toBe(0)
    expect(countOf(run.requests, "ListMultipartUploads", 503)).toBe(1)
    expect(countOf(run.requests, "AbortMultipartUpload", 204)).toBe(1)
    expect(await openUploads(prefix)).toEqual([])
  })

  it("SIGTERM while CreateMultipartUpload is in flight (chunked, parallel 3), 6 times: no open upload, exit 143 or 130", async () => {
    // Three chunks of ~8 MB of CSV each: every chunk begins a multipart upload, whose response the front end holds.
    const query = `SELECT i AS id, repeat(md5(i::text), 8) AS h FROM generate_series(1, 90000) AS i`
    for (let round = 0; round < 6; round++) {
      const prefix = `sigterm-create/${round}/`
      server.faults.clear()
      server.faults.add({ operation: "CreateMultipartUpload", respond: { delayResponseMs: 60_000 } })
      const config = configFile([
        {
          name: "hashes",
          query,
          format: "csv",
          mode: "chunked",
          chunk_column: "id",
          chunk_size: 30_000,
          parallel: 3,
          destination: s3Destination(server, BUCKET, { prefix, part_size: "5MiB" })
        }
      ])
      // Every other round waits for all three uploads, the others signal as soon as the first one exists. The first
      // three rounds run two of the chunks in worker threads, the others all three in the main thread.
      const wanted = round % 2 === 0 ? 3 : 1
      const lanes = round < 3 ? { RIVET_LANES: "2" } : { RIVET_LANES: "0" }
      const run = await signalWhen(["run", "-c", config], "SIGTERM", async () => (await openUploads(prefix)).length >= wanted, lanes)
      expect(run.signalled, run.stderr).toBe(true)
      expect([143, 130], run.stderr).toContain(run.code)
      expect(countOf(run.requests, "CompleteMultipartUpload")).toBe(0)
      expect(await openUploads(prefix), `round ${round}: ${run.stderr}`).toEqual([])
      expect(await server.listObjects(BUCKET, prefix)).toEqual([])
    }
  }, 180_000)
})
