import { DeleteObjectCommand, PutObjectCommand, type S3Client } from "@aws-sdk/client-s3"
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, beforeAll, describe, expect, it, onTestFinished } from "vitest"
import type { S3TestServer } from "../support/s3/server.js"
import {
  configFile,
  countOf,
  expectCommitted,
  isolateAwsEnv,
  runLogged,
  s3Destination,
  serverEnv,
  sha256Hex,
  startWithBucket,
  testS3Client
} from "./s3-support.js"

// `rivet run --validate` and `rivet validate` against the S3 test server: listing and reading back through the sink.
const BUCKET = "rivet-e2e-validate"
const PREFIX = "exports/vs3/"
const ROWS = 4_000

let server: S3TestServer
let env: Record<string, string>
let s3: S3Client

beforeAll(async () => {
  isolateAwsEnv()
  process.env["AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED"] = "true"
  server = await startWithBucket(BUCKET)
  env = serverEnv(server)
  s3 = testS3Client(server)
})
afterAll(async () => {
  s3?.destroy()
  await server?.stop()
})

describe("rivet validate (s3)", () => {
  it("validates after a run, then reports a modified, a deleted and an untracked object", async () => {
    // batch_size is not in ExportSpec: parts rotate between batches, so small batches give several parts.
    const spec = {
      name: "vs3",
      query: `select i as id, md5(i::text) as h from generate_series(1, ${ROWS}) as i`,
      format: "ndjson",
      batch_size: 500,
      // About 220 KB of NDJSON: several parts of the smallest cap.
      max_file_size: "64KB",
      destination: s3Destination(server, BUCKET, { prefix: PREFIX })
    }
    const config = configFile([spec])
    onTestFinished(() => fs.rmSync(path.dirname(config), { recursive: true, force: true }))
    const run = await runLogged(server, ["run", "-c", config, "--validate"], env)
    expect(run.stderr).not.toContain("Error:")
    expect(run.code).toBe(0)
    const manifest = await expectCommitted(server, BUCKET, PREFIX)
    expect(manifest.parts.length).toBeGreaterThan(2)
    expect(run.stderr).toContain(`OK   vs3: ${manifest.parts.length} parts, 4,000 rows verified`)
    // The run read its manifest back before _SUCCESS; --validate then read every part, the manifest, its kept copy
    // and _SUCCESS.
    expect(countOf(run.requests, "GetObject", 200)).toBe(manifest.parts.length + 4)

    const [first, second] = manifest.parts
    const modified = await server.getObject(BUCKET, `${PREFIX}${first!.path}`)
    modified[10] = modified[10] === 0x30 ? 0x31 : 0x30
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}${first!.path}`, Body: modified }))
    await s3.send(new DeleteObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}${second!.path}` }))
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: `${PREFIX}vs3_20200101_000000_000.ndjson`, Body: "{}\n" }))

    const result = await runLogged(server, ["validate", "-c", config], env)
    expect(result.code).toBe(3)
    expect(result.stdout.split("\n").filter((line) => /^(FAIL|WARN) /.test(line))).toEqual([
      `FAIL vs3: PART_CHECKSUM_MISMATCH ${first!.path}: sha256:${sha256Hex(modified)} expected ${first!.content_fingerprint} (same size, different bytes: modified after it was written)`,
      `FAIL vs3: PART_MISSING ${second!.path}: listed in the manifest but not at the destination`,
      "WARN vs3: UNTRACKED_OBJECT vs3_20200101_000000_000.ndjson: not listed in manifest.json or any kept manifest (named before the oldest kept run started: most likely a part of a run from before manifests were kept, or of a run whose kept manifest was deleted)"
    ])
    expect(result.stdout).toContain("1 export validated: 0 ok, 1 failed (2 failures, 1 warning)")
    expect(result.requests.filter((request) => !["ListObjectsV2", "GetObject"].includes(request.operation))).toEqual([])
  }, 120_000)
})
