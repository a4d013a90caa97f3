import { createHash, randomBytes } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import * as Stream from "effect/Stream"
import type { SinkDriverShape } from "../../../../src/core/plugin.js"
import { S3Config } from "../../../../src/plugins/sinks/s3/config.js"
import { makeS3Driver, type S3DriverOptions } from "../../../../src/plugins/sinks/s3/driver.js"
import type { S3TestServer } from "../../../support/s3/server.js"

export const MiB = 1024 * 1024

/** Random bytes of a given size (incompressible, so nothing can pass by accident). */
export const randomBlock = (size: number): Uint8Array => new Uint8Array(randomBytes(size))

export const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")

export const concat = (chunks: ReadonlyArray<Uint8Array>): Uint8Array => Buffer.concat(chunks)

/** Names of the env vars that hold the test server's keys in the driver's environment. */
export const KEY_ENV = { access_key_env: "RIVET_TEST_S3_AK", secret_key_env: "RIVET_TEST_S3_SK" } as const

/** The environment a driver sees: the server's valid key pair under {@link KEY_ENV}. */
export const keyEnv = (server: S3TestServer, secret = server.credentials.secretAccessKey) => ({
  RIVET_TEST_S3_AK: server.credentials.accessKeyId,
  RIVET_TEST_S3_SK: secret
})

/** Decodes a destination block pointed at the test server (as the runtime would, unknown keys rejected). */
export const s3Config = (server: S3TestServer, bucket: string, extra: Record<string, unknown> = {}): S3Config =>
  Schema.decodeUnknownSync(S3Config, { onExcessProperty: "error" })({
    bucket,
    region: server.region,
    endpoint: server.endpoint,
    ...KEY_ENV,
    ...extra
  })

/** A driver against the test server, scoped to the test. */
export const testDriver = (
  server: S3TestServer,
  bucket: string,
  options: {
    readonly extra?: Record<string, unknown>
    readonly env?: Readonly<Record<string, string | undefined>>
    readonly driver?: S3DriverOptions
  } = {}
) =>
  makeS3Driver(
    s3Config(server, bucket, options.extra),
    { configDir: ".", exportName: "orders", env: options.env ?? keyEnv(server) },
    options.driver
  )

/** Reads an object back through the driver. */
export const readAll = (driver: SinkDriverShape, key: string) => {
  const read = driver.read
  if (read === undefined) return Effect.die(new Error("the S3 driver must support read"))
  return Stream.runCollect(read(key)).pipe(Effect.map((chunks) => concat(Array.from(chunks))))
}
