import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { SinkError } from "../../../../src/core/errors.js"
import { SinkDriver } from "../../../../src/core/plugin.js"
import { S3Config } from "../../../../src/plugins/sinks/s3/config.js"
import {
  credentialSourceOf,
  describeCredentialSource,
  resolveCredentials
} from "../../../../src/plugins/sinks/s3/credentials.js"
import s3Plugin from "../../../../src/plugins/sinks/s3/index.js"

const config = (input: Record<string, unknown>) =>
  Schema.decodeUnknownSync(S3Config)({ bucket: "rivet-creds", region: "us-east-1", ...input })

const envPair = { access_key_env: "RIVET_AK", secret_key_env: "RIVET_SK" }

describe("credential source", () => {
  it("follows the documented order: default chain, env references, profile", () => {
    expect(credentialSourceOf(config({}))).toEqual({ kind: "default-chain" })
    expect(credentialSourceOf(config(envPair))).toEqual({
      kind: "env",
      accessKeyEnv: "RIVET_AK",
      secretKeyEnv: "RIVET_SK",
      sessionTokenEnv: undefined
    })
    expect(credentialSourceOf(config({ aws_profile: "reporting" }))).toEqual({ kind: "profile", profile: "reporting" })
    expect(describeCredentialSource({ kind: "profile", profile: "reporting" })).toBe("aws_profile 'reporting'")
  })

  it.effect("reads the named variables from the plugin's environment", () =>
    Effect.gen(function* () {
      const source = credentialSourceOf(config({ ...envPair, session_token_env: "RIVET_TOKEN" }))
      const provider = yield* resolveCredentials(source, { RIVET_AK: "AKIDEXAMPLE", RIVET_SK: "s3cr3t", RIVET_TOKEN: "tok" })
      if (typeof provider !== "function") throw new Error("expected a provider function")
      const identity = yield* Effect.promise(() => provider())
      expect(identity).toEqual({ accessKeyId: "AKIDEXAMPLE", secretAccessKey: "s3cr3t", sessionToken: "tok" })
    })
  )

  it.effect("fails naming an unset variable, without any secret in the error", () =>
    Effect.gen(function* () {
      const source = credentialSourceOf(config(envPair))
      const error = yield* Effect.flip(resolveCredentials(source, { RIVET_AK: "AKIDEXAMPLE" }))
      expect(error).toBeInstanceOf(SinkError)
      expect(error.reason).toBe("InvalidCredentials")
      expect(error.retryable).toBe(false)
      expect(error.message).toBe("environment variable 'RIVET_SK' named by destination.secret_key_env is not set")
      expect(error.hint).toContain("export RIVET_SK=")
      expect(JSON.stringify(error)).not.toContain("AKIDEXAMPLE")
    })
  )

  it.effect("treats an empty variable as missing", () =>
    Effect.gen(function* () {
      const source = credentialSourceOf(config({ ...envPair, session_token_env: "RIVET_TOKEN" }))
      const error = yield* Effect.flip(resolveCredentials(source, { RIVET_AK: "a", RIVET_SK: "b", RIVET_TOKEN: "" }))
      expect(error.message).toBe("environment variable 'RIVET_TOKEN' named by destination.session_token_env is empty")
    })
  )

  it.effect("makes the plugin's layer fail before any network I/O when a variable is unset", () =>
    Effect.gen(function* () {
      const layer = s3Plugin.make(config({ ...envPair, endpoint: "http://127.0.0.1:1" }), {
        configDir: ".",
        exportName: "orders",
        env: {}
      })
      const error = yield* Effect.flip(Effect.scoped(Layer.build(layer)))
      expect(error.message).toBe("environment variable 'RIVET_AK' named by destination.access_key_env is not set")
    })
  )

  it.scoped("builds a driver whose label, uri and capabilities follow the config", () =>
    Effect.gen(function* () {
      const layer = s3Plugin.make(config({ ...envPair, prefix: "exports/daily", part_size: "16MiB", upload_concurrency: 6 }), {
        configDir: ".",
        env: { RIVET_AK: "a", RIVET_SK: "b" }
      })
      const driver = yield* Effect.provide(SinkDriver, layer)
      expect(driver.label).toBe("S3(rivet-creds)")
      expect(driver.uri()).toBe("s3://rivet-creds/exports/daily/")
      expect(driver.uri("orders_20260406_120000_123.parquet")).toBe(
        "s3://rivet-creds/exports/daily/orders_20260406_120000_123.parquet"
      )
      expect(driver.capabilities).toEqual({ markers: true, blockSize: 16 * 1024 ** 2, concurrency: 6, releasesBytes: true })
      const bare = yield* Effect.provide(
        SinkDriver,
        s3Plugin.make(config(envPair), { configDir: ".", env: { RIVET_AK: "a", RIVET_SK: "b" } })
      )
      expect(bare.uri()).toBe("s3://rivet-creds/")
    })
  )
})
