import { S3Client } from "@aws-sdk/client-s3"
import type { ChildProcess } from "node:child_process"
import { createHash } from "node:crypto"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { expect } from "vitest"
import { type CliResult, runCli, writeConfig } from "../support/cli.js"
import { testPgUrl } from "../support/pg.js"
import { startS3Server, type S3TestServer } from "../support/s3/server.js"

/** One request the S3 test server logged. */
export type LoggedRequest = ReturnType<S3TestServer["requests"]>[number]

/** A CLI run plus the S3 requests it made (and only those). */
export interface S3CliRun extends CliResult {
  readonly requests: ReadonlyArray<LoggedRequest>
}

/** What one export in a generated config reads, how it is written, and where to. */
export interface ExportSpec {
  readonly name: string
  readonly table?: string
  readonly query?: string
  readonly format?: string
  readonly max_file_size?: string
  readonly mode?: string
  readonly cursor_column?: string
  readonly chunk_column?: string
  readonly chunk_size?: number
  readonly parallel?: number
  readonly chunk_checkpoint?: boolean
  readonly destination: Readonly<Record<string, unknown>>
}

/**
 * The AWS variables of the test worker are removed so that `runCli` (which passes `process.env` on) never hands
 * the developer's or CI's own credentials, profile or region to the CLI: each test states the environment it means.
 */
export const isolateAwsEnv = (): void => {
  for (const name of Object.keys(process.env)) if (name.startsWith("AWS_")) delete process.env[name]
}

/** Shared files that do not exist and no instance metadata: the default chain can only find what a test sets. */
export const noAmbientCredentials = (): Record<string, string> => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-e2e-aws-"))
  return {
    AWS_SHARED_CREDENTIALS_FILE: path.join(dir, "missing-credentials"),
    AWS_CONFIG_FILE: path.join(dir, "missing-config"),
    AWS_EC2_METADATA_DISABLED: "true"
  }
}

/** The key pair the server accepts, as the default chain's environment variables. */
export const envCredentials = (server: S3TestServer): Record<string, string> => ({
  AWS_ACCESS_KEY_ID: server.credentials.accessKeyId,
  AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey
})

/** The environment a CLI run needs to reach `server` with its valid key pair, and nothing ambient. */
/** An AWS SDK client for the test server, to look at what a run stored (checksums only where S3 requires them). */
export const testS3Client = (server: S3TestServer): S3Client =>
  new S3Client({
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    credentials: server.credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED"
  })

export const serverEnv = (server: S3TestServer): Record<string, string> => ({
  ...noAmbientCredentials(),
  ...envCredentials(server)
})

/** A config file (JSON is YAML) reading from the test PostgreSQL. */
export const configFile = (exports: ReadonlyArray<ExportSpec>): string =>
  writeConfig(JSON.stringify({ source: { type: "postgres", url: testPgUrl() }, exports }, null, 2))

/** An `s3` destination block on the test server (loopback endpoint, so the guard accepts it). */
export const s3Destination = (
  server: S3TestServer,
  bucket: string,
  extra: Readonly<Record<string, unknown>> = {}
): Record<string, unknown> => ({ type: "s3", bucket, region: server.region, endpoint: server.endpoint, ...extra })

/** Runs the built CLI and returns the S3 requests it made (tests in a file run one after another). */
export const runLogged = async (
  server: S3TestServer,
  args: ReadonlyArray<string>,
  env: Record<string, string>
): Promise<S3CliRun> => {
  const before = server.requests().length
  const result = await runCli(args, { env })
  return { ...result, requests: server.requests().slice(before) }
}

/**
 * Runs the built CLI and calls `act` once, as soon as `ready` holds for the requests it has made so far (polled).
 * `acted` is false when the process ended before that.
 */
export const actWhen = async (
  server: S3TestServer,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  ready: (requests: ReadonlyArray<LoggedRequest>) => boolean,
  act: (child: ChildProcess) => unknown
): Promise<S3CliRun & { readonly acted: boolean }> => {
  const before = server.requests().length
  let acted = false
  let poll: NodeJS.Timeout | undefined
  let failure: unknown
  try {
    const result = await runCli(args, {
      env,
      onStart: (child) => {
        poll = setInterval(() => {
          if (acted || !ready(server.requests().slice(before))) return
          acted = true
          Promise.resolve(act(child)).catch((error: unknown) => (failure ??= error))
        }, 20)
      }
    })
    if (failure !== undefined) throw failure
    return { ...result, acted, requests: server.requests().slice(before) }
  } finally {
    clearInterval(poll)
  }
}

/** Runs the built CLI and sends it SIGINT as soon as `ready` holds; `interrupted` is false when it ended before. */
export const interruptWhen = async (
  server: S3TestServer,
  args: ReadonlyArray<string>,
  env: Record<string, string>,
  ready: (requests: ReadonlyArray<LoggedRequest>) => boolean
) => {
  const { acted, ...run } = await actWhen(server, args, env, ready, (child) => child.kill("SIGINT"))
  return { ...run, interrupted: acted }
}

/** How many logged requests were `operation` (with `status`, when given). */
export const countOf = (requests: ReadonlyArray<LoggedRequest>, operation: string, status?: number): number =>
  requests.filter((request) => request.operation === operation && (status === undefined || request.status === status))
    .length

/** Requests that write object data: nothing a failed run sends may be retried. */
export const WRITE_OPERATIONS = ["PutObject", "CreateMultipartUpload", "UploadPart", "CompleteMultipartUpload"]

export const writeRequests = (requests: ReadonlyArray<LoggedRequest>): ReadonlyArray<LoggedRequest> =>
  requests.filter((request) => WRITE_OPERATIONS.includes(request.operation))

export const sha256Hex = (bytes: Uint8Array | string): string => createHash("sha256").update(bytes).digest("hex")

/** A Uint8Array's bytes as an ArrayBuffer of exactly that length (what `readRows` takes). */
export const arrayBufferOf = (bytes: Uint8Array): ArrayBuffer =>
  bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer

/** The `retries:` row of the run summary on stderr, or 0 when absent (it is printed only when > 0). */
export const summaryRetries = (stderr: string): number => {
  const match = /^\s+retries:\s+([\d,]+)$/m.exec(stderr)
  return match ? Number(match[1]!.replaceAll(",", "")) : 0
}

/** The manifest written under the prefix, parsed, plus its exact bytes. */
export interface StoredManifest {
  readonly bytes: Uint8Array
  readonly run_id: string
  readonly parts: ReadonlyArray<{ path: string; rows: number; size_bytes: number; content_fingerprint: string }>
  readonly row_count: number
  readonly part_count: number
  readonly destination: { type: string; uri: string }
}

/**
 * Checks the markers of a successful run under `prefix`: `manifest.json`, its kept copy `_manifests/{run_id}.json`
 * (the same bytes), and `_SUCCESS` whose body is `sha256:<sha256 of the manifest bytes>\n`; every part listed in the
 * manifest exists with its recorded size and sha256. Returns the manifest.
 */
export const expectCommitted = async (server: S3TestServer, bucket: string, prefix: string): Promise<StoredManifest> => {
  const manifestBytes = await server.getObject(bucket, `${prefix}manifest.json`)
  const success = new TextDecoder().decode(await server.getObject(bucket, `${prefix}_SUCCESS`))
  expect(success).toBe(`sha256:${sha256Hex(manifestBytes)}\n`)
  const manifest = JSON.parse(new TextDecoder().decode(manifestBytes)) as Omit<StoredManifest, "bytes">
  expect(await server.getObject(bucket, `${prefix}_manifests/${manifest.run_id}.json`)).toEqual(manifestBytes)
  expect(manifest.part_count).toBe(manifest.parts.length)
  expect(manifest.destination).toEqual({ type: "s3", uri: `s3://${bucket}/${prefix}` })
  const sizes = new Map((await server.listObjects(bucket, prefix)).map((object) => [object.key, object.size]))
  for (const part of manifest.parts) {
    const key = `${prefix}${part.path}`
    expect(sizes.get(key), key).toBe(part.size_bytes)
    expect(`sha256:${sha256Hex(await server.getObject(bucket, key))}`, key).toBe(part.content_fingerprint)
  }
  return { ...manifest, bytes: manifestBytes }
}

/** Starts the server with `bucket` created. */
export const startWithBucket = async (
  bucket: string,
  options?: Parameters<typeof startS3Server>[0]
): Promise<S3TestServer> => {
  const server = await startS3Server(options)
  try {
    await server.createBucket(bucket)
  } catch (error) {
    await server.stop()
    throw error
  }
  return server
}
