import { mkdtemp, rm, writeFile } from "node:fs/promises"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { afterAll, beforeAll, describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { S3Config } from "../../../../src/plugins/sinks/s3/config.js"
import { makeS3Driver } from "../../../../src/plugins/sinks/s3/driver.js"
import { startS3Server, type S3TestServer } from "../../../support/s3/server.js"
import { keyEnv, randomBlock, sha256, testDriver } from "./harness.js"

const BUCKET = "rivet-s3-credentials"
let server: S3TestServer
let dir: string

beforeAll(async () => {
  server = await startS3Server()
  await server.createBucket(BUCKET)
  dir = await mkdtemp(join(tmpdir(), "rivet-s3-creds-"))
})
afterAll(async () => {
  await server.stop()
  await rm(dir, { recursive: true, force: true })
})

type Env = Readonly<Record<string, string | undefined>>

/** A driver with no credential keys in its config unless `extra` adds some. */
const driverWith = (env: Env, extra: Record<string, unknown> = {}) =>
  makeS3Driver(
    Schema.decodeUnknownSync(S3Config)({ bucket: BUCKET, region: server.region, endpoint: server.endpoint, ...extra }),
    { configDir: ".", env }
  )

const roundTrip = (key: string, env: Env, extra: Record<string, unknown> = {}) =>
  Effect.gen(function* () {
    const s3 = yield* driverWith(env, extra)
    const bytes = randomBlock(4096)
    yield* s3.put(key, bytes, "text/csv")
    expect(sha256(yield* Effect.promise(() => server.getObject(BUCKET, key)))).toBe(sha256(bytes))
  })

const AWS_VARS = [
  "AWS_ACCESS_KEY_ID",
  "AWS_SECRET_ACCESS_KEY",
  "AWS_SESSION_TOKEN",
  "AWS_PROFILE",
  "AWS_SHARED_CREDENTIALS_FILE",
  "AWS_CONFIG_FILE",
  "AWS_EC2_METADATA_DISABLED",
  "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
  "AWS_CONTAINER_CREDENTIALS_FULL_URI",
  "AWS_WEB_IDENTITY_TOKEN_FILE",
  "AWS_ROLE_ARN"
]

/** Replaces the AWS_* variables of process.env for the scope (the SDK's default chain reads process.env). */
const withProcessEnv = (vars: Record<string, string>) =>
  Effect.acquireRelease(
    Effect.sync(() => {
      const saved = Object.fromEntries(AWS_VARS.map((name) => [name, process.env[name]]))
      for (const name of AWS_VARS) delete process.env[name]
      Object.assign(process.env, vars)
      return saved
    }),
    (saved) =>
      Effect.sync(() => {
        for (const [name, value] of Object.entries(saved)) {
          if (value === undefined) delete process.env[name]
          else process.env[name] = value
        }
      })
  )

/** Points the shared files at paths that do not exist, so nothing on this machine leaks into a test. */
const noSharedFiles = () => ({
  AWS_SHARED_CREDENTIALS_FILE: join(dir, "absent-credentials"),
  AWS_CONFIG_FILE: join(dir, "absent-config"),
  AWS_EC2_METADATA_DISABLED: "true"
})

describe("S3 credential resolution against an S3-protocol server", () => {
  it.scoped("option 2: access_key_env/secret_key_env read from the plugin's environment", () =>
    Effect.gen(function* () {
      const s3 = yield* testDriver(server, BUCKET)
      yield* s3.put("env-pair.csv", randomBlock(16), "text/csv")
      yield* s3.check
    })
  )

  it.scoped("option 1: the default chain finds AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY in process.env", () =>
    Effect.gen(function* () {
      yield* withProcessEnv({
        ...noSharedFiles(),
        AWS_ACCESS_KEY_ID: server.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey
      })
      yield* roundTrip("default-chain.csv", process.env)
    })
  )

  it.scoped("option 1: a program's own environment gives the default chain its keys", () =>
    Effect.gen(function* () {
      yield* withProcessEnv(noSharedFiles())
      yield* roundTrip("default-chain-own-env.csv", {
        AWS_ACCESS_KEY_ID: server.credentials.accessKeyId,
        AWS_SECRET_ACCESS_KEY: server.credentials.secretAccessKey
      })
    })
  )

  it.scoped("option 1: no credentials anywhere is InvalidCredentials with a hint about the chain", () =>
    Effect.gen(function* () {
      yield* withProcessEnv(noSharedFiles())
      const s3 = yield* driverWith(process.env)
      const error = yield* Effect.flip(s3.check)
      expect(error.reason).toBe("InvalidCredentials")
      expect(error.retryable).toBe(false)
      expect(error.message).toContain("CredentialsProviderError")
      expect(error.hint).toContain("the AWS default credential chain")
      expect(error.hint).toContain("access_key_env/secret_key_env or aws_profile")
    })
  )

  it.scoped("option 3: aws_profile from a shared credentials file named by AWS_SHARED_CREDENTIALS_FILE", () =>
    Effect.gen(function* () {
      const file = join(dir, "credentials")
      yield* Effect.promise(() =>
        writeFile(
          file,
          [
            "[default]",
            "aws_access_key_id = AKIAWRONGDEFAULT0000",
            "aws_secret_access_key = wrong",
            "",
            "[rivet-test]",
            `aws_access_key_id = ${server.credentials.accessKeyId}`,
            `aws_secret_access_key = ${server.credentials.secretAccessKey}`,
            ""
          ].join("\n")
        )
      )
      yield* withProcessEnv(noSharedFiles())
      const env = { AWS_SHARED_CREDENTIALS_FILE: file, AWS_CONFIG_FILE: join(dir, "absent-config-2") }
      yield* roundTrip("profile.csv", env, { aws_profile: "rivet-test" })
      const missing = yield* driverWith(env, { aws_profile: "no-such-profile" })
      const error = yield* Effect.flip(missing.check)
      expect(error.reason).toBe("InvalidCredentials")
      expect(error.hint).toContain("aws_profile 'no-such-profile'")
    })
  )

  it.scoped("env references take the named variables, not the default AWS_* ones", () =>
    Effect.gen(function* () {
      const s3 = yield* testDriver(server, BUCKET, {
        env: { ...keyEnv(server), AWS_ACCESS_KEY_ID: "AKIAUNKNOWNKEY000000", AWS_SECRET_ACCESS_KEY: "x" }
      })
      yield* s3.put("named-vars.csv", randomBlock(16), "text/csv")
    })
  )
})
