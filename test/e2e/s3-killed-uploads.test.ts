import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { testPgUrl } from "../support/pg.js"
import type { S3TestServer } from "../support/s3/server.js"
import {
  actWhen,
  configFile,
  expectCommitted,
  isolateAwsEnv,
  runLogged,
  s3Destination,
  serverEnv,
  startWithBucket
} from "./s3-support.js"

// A process killed outright (SIGKILL, OOM) cannot abort its multipart uploads. The run that continues its work with
// `--resume` holds the export's lease, so every upload still open under the run's part names is the dead attempt's:
// it lists and aborts them, and nothing stays open once it ends.
const BUCKET = "rivet-e2e-s3-killed-uploads"
const ROWS = 90_000
// Three chunks of ~8 MB of CSV: each chunk is a two-part multipart upload at 5 MiB parts.
const QUERY = `SELECT i AS id, repeat(md5(i::text), 8) AS h FROM generate_series(1, ${ROWS}) AS i`

// A key with only the seed's two permissions: the resumed run cannot list or abort uploads, and says so.
const MINIMAL = { accessKeyId: "AKIARIVETMINIMAL0002", secretAccessKey: "minimal-secret", allow: ["s3:PutObject", "s3:GetBucketLocation"] }

let server: S3TestServer
let env: Record<string, string>

beforeAll(async () => {
  isolateAwsEnv()
  server = await startWithBucket(BUCKET, { extraCredentials: [MINIMAL] })
  env = serverEnv(server)
})
afterAll(() => server?.stop())

/** A fresh PostgreSQL schema for a distributed run's state; dropped again when the file ends. */
const freshStateUrl = async (name: string): Promise<string> => {
  const schema = `rivet_killed_${name}_${process.pid}`
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  try {
    await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE; CREATE SCHEMA ${schema}`)
  } finally {
    await sql.end()
  }
  schemas.push(schema)
  return `${testPgUrl()}${testPgUrl().includes("?") ? "&" : "?"}search_path=${schema}`
}
const schemas: Array<string> = []
afterAll(async () => {
  const sql = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  for (const schema of schemas) await sql.unsafe(`DROP SCHEMA IF EXISTS ${schema} CASCADE`)
  await sql.end()
})

const openUploads = async (prefix: string) =>
  (await server.listMultipartUploads(BUCKET)).filter((upload) => upload.key.startsWith(prefix))

/** Every id of the CSV parts the manifest lists, in manifest order. */
const exportedIds = async (prefix: string): Promise<Array<number>> => {
  const manifest = await expectCommitted(server, BUCKET, prefix)
  const ids: Array<number> = []
  for (const part of manifest.parts) {
    const lines = new TextDecoder().decode(await server.getObject(BUCKET, `${prefix}${part.path}`)).split("\n")
    for (const line of lines.slice(1)) if (line !== "") ids.push(Number(line.split(",")[0]))
  }
  return ids
}

/** A checkpointed chunked export (three ~8 MB chunks, two at once) under `prefix`. */
const chunkedConfig = (prefix: string) =>
  configFile([
    {
      name: "hashes",
      query: QUERY,
      format: "csv",
      mode: "chunked",
      chunk_column: "id",
      chunk_size: 30_000,
      parallel: 2,
      chunk_checkpoint: true,
      destination: s3Destination(server, BUCKET, { prefix, part_size: "5MiB" })
    }
  ])

/** Runs the export with its parts stalled and SIGKILLs it once two uploads are begun; returns the uploads left open. */
const killMidUpload = async (config: string, prefix: string, runEnv: Record<string, string>, args: ReadonlyArray<string> = []) => {
  server.faults.add({ operation: "UploadPart", respond: { stallMs: 60_000 } })
  const killed = await actWhen(
    server,
    ["run", "-c", config, ...args],
    runEnv,
    (requests) => requests.filter((request) => request.operation === "CreateMultipartUpload" && request.status === 200).length >= 2,
    (child) => child.kill("SIGKILL")
  )
  server.faults.clear()
  server.releaseStalls()
  expect(killed.acted, killed.stderr).toBe(true)
  expect(killed.code).not.toBe(0)
  const left = await openUploads(prefix)
  expect(left.length, "the killed run left its uploads open").toBeGreaterThanOrEqual(2)
  return left
}

describe("SIGKILL mid-upload, then --resume: no multipart upload stays open", () => {
  it("chunked, checkpointed, parallel 2: the resumed run aborts the dead attempt's uploads; every row exactly once", async () => {
    const prefix = "killed/chunked/"
    const config = chunkedConfig(prefix)
    const left = await killMidUpload(config, prefix, env)

    const resumed = await runLogged(server, ["run", "-c", config, "--resume"], env)
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stderr).toMatch(/resuming run/)
    expect(resumed.stderr).toMatch(/aborted \d+ multipart upload\(s\) left open by a killed earlier attempt/)
    for (const upload of left) expect(resumed.stderr).toContain(upload.key.slice(prefix.length))
    expect(await openUploads(prefix)).toEqual([])
    const ids = await exportedIds(prefix)
    expect(ids.length).toBe(ROWS)
    expect(new Set(ids).size).toBe(ROWS)
  }, 60_000)

  it("with only s3:PutObject + s3:GetBucketLocation the resume still publishes; notices name the listings it could not do", async () => {
    const prefix = "killed/minimal/"
    const config = chunkedConfig(prefix)
    const minimalEnv = { ...env, AWS_ACCESS_KEY_ID: MINIMAL.accessKeyId, AWS_SECRET_ACCESS_KEY: MINIMAL.secretAccessKey }
    const left = await killMidUpload(config, prefix, minimalEnv)

    const resumed = await runLogged(server, ["run", "-c", config, "--resume"], minimalEnv)
    expect(resumed.code, resumed.stderr).toBe(0)
    expect(resumed.stderr).toMatch(/could not list the destination for files of the interrupted attempt .*s3:ListBucket/)
    expect(resumed.stderr).toMatch(/could not check for multipart uploads left open .*s3:ListBucketMultipartUploads/)
    const ids = await exportedIds(prefix)
    expect(new Set(ids).size).toBe(ROWS)
    // Without the listing the dead attempt's uploads stay (a lifecycle rule's job); the resumed run left none of its own.
    expect((await openUploads(prefix)).map((upload) => upload.uploadId).sort()).toEqual(left.map((upload) => upload.uploadId).sort())
  }, 60_000)

  it("distributed (--worker): a worker killed mid-upload; the worker that takes over its claims and publishes aborts its uploads", async () => {
    const prefix = "killed/distributed/"
    const config = chunkedConfig(prefix)
    // Claims expire 3 s after the killed worker's last heartbeat, so the next worker takes them over soon.
    const workerEnv = { ...env, RIVET_STATE_URL: await freshStateUrl("dist"), RIVET_LEASE_TTL: "3s" }
    const worker = ["--worker", "--run-id", "killed-1"]
    const left = await killMidUpload(config, prefix, workerEnv, worker)

    const next = await runLogged(server, ["run", "-c", config, ...worker], workerEnv)
    expect(next.code, next.stderr).toBe(0)
    expect(next.stderr).toMatch(/aborted \d+ multipart upload\(s\) left open by a killed earlier attempt/)
    for (const upload of left) expect(next.stderr).toContain(upload.key.slice(prefix.length))
    expect(await openUploads(prefix)).toEqual([])
    const ids = await exportedIds(prefix)
    expect(ids.length).toBe(ROWS)
    expect(new Set(ids).size).toBe(ROWS)
  }, 60_000)
})
