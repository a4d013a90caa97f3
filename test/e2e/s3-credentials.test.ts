import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest"
import type { S3TestServer } from "../support/s3/server.js"
import {
  configFile,
  countOf,
  expectCommitted,
  isolateAwsEnv,
  noAmbientCredentials,
  runLogged,
  s3Destination,
  serverEnv,
  startWithBucket,
  writeRequests
} from "./s3-support.js"

// The three documented credential sources, and every credential / permission / bucket error, through the built CLI.
const BUCKET = "rivet-e2e-s3-credentials"
const MISSING_BUCKET = "rivet-e2e-s3-no-such-bucket"
const SMALL_QUERY = "SELECT i AS id, 'row ' || i AS label FROM generate_series(1, 1000) AS i"
/** ~11 MB of CSV: larger than one 5MiB part, so written with a multipart upload. */
const MEDIUM_QUERY = "SELECT i AS id, md5(i::text) AS h1, md5((i * 7)::text) AS h2 FROM generate_series(1, 150000) AS i"
const WRONG_KEY_ID = "AKIARIVETWRONGKEY999"

let server: S3TestServer

beforeAll(async () => {
  isolateAwsEnv()
  server = await startWithBucket(BUCKET)
})
afterAll(() => server?.stop())
afterEach(() => server.faults.clear())

const exportTo = (
  prefix: string,
  extra: Readonly<Record<string, unknown>> = {},
  options: { bucket?: string; query?: string; format?: string } = {}
) =>
  configFile([
    {
      name: "small",
      query: options.query ?? SMALL_QUERY,
      format: options.format ?? "parquet",
      destination: s3Destination(server, options.bucket ?? BUCKET, { prefix, ...extra })
    }
  ])

const expectSuccess = async (prefix: string, env: Record<string, string>, extra: Readonly<Record<string, unknown>> = {}) => {
  const run = await runLogged(server, ["run", "-c", exportTo(prefix, extra)], env)
  expect(run.stderr).toMatch(/status:\s+success/)
  expect(run.code).toBe(0)
  expect(run.requests.every((request) => request.status === 200)).toBe(true)
  const manifest = await expectCommitted(server, BUCKET, prefix)
  expect(manifest.row_count).toBe(1000)
  return run
}

/** Exit 1, the error and its hint on stderr, no secret echoed, nothing written, and no write retried. */
const expectRejected = async (
  prefix: string,
  run: Awaited<ReturnType<typeof runLogged>>,
  expected: { error: string; hint?: string; writes: ReadonlyArray<string>; bucket?: string }
) => {
  expect(run.code).toBe(1)
  expect(run.stderr).toContain(expected.error)
  if (expected.hint !== undefined) expect(run.stderr).toContain(`Hint: ${expected.hint}`)
  expect(run.stderr).not.toContain(server.credentials.secretAccessKey)
  expect(run.stderr).not.toMatch(/status:\s+success/)
  expect(writeRequests(run.requests).map((request) => `${request.operation} ${request.status}`)).toEqual(expected.writes)
  expect(await server.listObjects(expected.bucket ?? BUCKET, prefix)).toEqual([])
  expect(await server.listMultipartUploads(BUCKET)).toEqual([])
}

describe("credentials", () => {
  it("default chain: AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY", async () => {
    await expectSuccess("creds/default-chain/", serverEnv(server))
  })

  it("access_key_env / secret_key_env name the variables to use (over AWS_ACCESS_KEY_ID)", async () => {
    const env = {
      ...noAmbientCredentials(),
      RIVET_E2E_S3_KEY: server.credentials.accessKeyId,
      RIVET_E2E_S3_SECRET: server.credentials.secretAccessKey,
      AWS_ACCESS_KEY_ID: WRONG_KEY_ID,
      AWS_SECRET_ACCESS_KEY: "not-the-secret"
    }
    await expectSuccess("creds/named-env/", env, { access_key_env: "RIVET_E2E_S3_KEY", secret_key_env: "RIVET_E2E_S3_SECRET" })
  })

  it("aws_profile reads its profile from the shared credentials file (AWS_SHARED_CREDENTIALS_FILE)", async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-e2e-profile-"))
    const file = path.join(dir, "credentials")
    fs.writeFileSync(
      file,
      [
        "[default]",
        `aws_access_key_id = ${WRONG_KEY_ID}`,
        "aws_secret_access_key = not-the-secret",
        "",
        "[rivet-e2e]",
        `aws_access_key_id = ${server.credentials.accessKeyId}`,
        `aws_secret_access_key = ${server.credentials.secretAccessKey}`,
        ""
      ].join("\n")
    )
    const env = {
      ...noAmbientCredentials(),
      AWS_SHARED_CREDENTIALS_FILE: file,
      AWS_ACCESS_KEY_ID: WRONG_KEY_ID,
      AWS_SECRET_ACCESS_KEY: "not-the-secret"
    }
    await expectSuccess("creds/profile/", env, { aws_profile: "rivet-e2e" })
  })

  it("an empty default chain fails before any request, naming where it looked", async () => {
    const run = await runLogged(server, ["run", "-c", exportTo("creds/none/")], noAmbientCredentials())
    await expectRejected("creds/none/", run, {
      error: "Could not load credentials",
      hint: "Rivet could not load credentials from the AWS default credential chain",
      writes: []
    })
    expect(run.requests).toEqual([])
  })

  it("a wrong secret is SignatureDoesNotMatch with the region hint, not retried", async () => {
    const env = { ...serverEnv(server), AWS_SECRET_ACCESS_KEY: "not-the-secret" }
    const run = await runLogged(server, ["run", "-c", exportTo("creds/wrong-secret/")], env)
    await expectRejected("creds/wrong-secret/", run, {
      error: "(SignatureDoesNotMatch, HTTP 403)",
      hint: "Ensure region is set (even for MinIO, e.g. us-east-1), and that the secret key matches the access key.",
      writes: ["PutObject 403"]
    })
  })

  it("an unknown access key id is InvalidAccessKeyId with its hint, not retried", async () => {
    const env = { ...serverEnv(server), AWS_ACCESS_KEY_ID: WRONG_KEY_ID }
    const run = await runLogged(server, ["run", "-c", exportTo("creds/unknown-key/")], env)
    await expectRejected("creds/unknown-key/", run, {
      error: "(InvalidAccessKeyId, HTTP 403)",
      hint: "The access key id from the AWS default credential chain (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, ~/.aws files, container or instance role) is not known to this endpoint: check it (a temporary ASIA… key also needs its session token).",
      writes: ["PutObject 403"]
    })
  })

  it("access_key_env naming an unset variable fails before any request, naming the variable", async () => {
    const env = { ...serverEnv(server), RIVET_E2E_S3_SECRET: "x" }
    const extra = { access_key_env: "RIVET_E2E_UNSET_KEY", secret_key_env: "RIVET_E2E_S3_SECRET" }
    const run = await runLogged(server, ["run", "-c", exportTo("creds/unset/", extra)], env)
    await expectRejected("creds/unset/", run, {
      error: "Error: environment variable 'RIVET_E2E_UNSET_KEY' named by destination.access_key_env is not set",
      hint: "Export it before running (export RIVET_E2E_UNSET_KEY=…)",
      writes: []
    })
    expect(run.requests).toEqual([])
  })
})

describe("permission and bucket errors", () => {
  const env = () => serverEnv(server)
  const ACCESS_HINT = "Check IAM policy. Rivet needs s3:PutObject and s3:GetBucketLocation."

  it("AccessDenied (on every request) is reported with the IAM hint, not retried", async () => {
    server.faults.add({ operation: "*", respond: { s3Error: "AccessDenied" } })
    const run = await runLogged(server, ["run", "-c", exportTo("perm/all/")], env())
    await expectRejected("perm/all/", run, { error: "(AccessDenied, HTTP 403)", hint: ACCESS_HINT, writes: ["PutObject 403"] })
  })

  it("AccessDenied on CreateMultipartUpload stops the export before any part is sent", async () => {
    server.faults.add({ operation: "CreateMultipartUpload", respond: { s3Error: "AccessDenied" } })
    const config = exportTo("perm/multipart/", { part_size: "5MiB" }, { query: MEDIUM_QUERY, format: "csv" })
    const run = await runLogged(server, ["run", "-c", config], env())
    await expectRejected("perm/multipart/", run, {
      error: "S3 CreateMultipartUpload s3://rivet-e2e-s3-credentials/perm/multipart/small_",
      hint: ACCESS_HINT,
      writes: ["CreateMultipartUpload 403"]
    })
    expect(countOf(run.requests, "UploadPart")).toBe(0)
  })

  it("a missing bucket is NoSuchBucket with the `aws s3 mb` hint, not retried", async () => {
    const run = await runLogged(server, ["run", "-c", exportTo("x/", {}, { bucket: MISSING_BUCKET })], env())
    await expectRejected("x/", run, {
      error: "(NoSuchBucket, HTTP 404)",
      hint: `The bucket must already exist. Create it first: aws s3 mb s3://${MISSING_BUCKET}`,
      writes: ["PutObject 404"],
      bucket: BUCKET
    })
  })
})
