import { S3Client } from "@aws-sdk/client-s3"
import { createHash } from "node:crypto"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type { SinkError } from "../../../core/errors.js"
import type { S3Config } from "./config.js"
import type { S3Credentials } from "./credentials.js"
import { toSinkError } from "./errors.js"

/** Network timeouts of the S3 client that override the config. Tests shorten them to exercise a stalled request. */
export interface S3Timeouts {
  /** Abandon a connection attempt after this long. Default 10 s. */
  readonly connectMs?: number
  /**
   * Fail a request whose socket has been idle this long. Default: the destination's `request_timeout`. An idle
   * timeout rather than a total one, so a large part on a slow link is never cut off while bytes still flow.
   */
  readonly idleMs?: number
}

/**
 * An S3 client that never retries (the runtime owns retries), computes checksums only when an operation requires
 * them (S3 emulators mishandle aws-chunked bodies), and fails a stalled request instead of hanging. Destroyed
 * when the scope closes.
 */
export const makeS3Client = (
  config: S3Config,
  credentials: S3Credentials,
  timeouts: S3Timeouts = {}
): Effect.Effect<S3Client, never, Scope.Scope> => {
  // The SDK's default pool (50 sockets) would queue part uploads at high upload_concurrency.
  const agent = { keepAlive: true, maxSockets: Math.max(50, config.upload_concurrency * 2) }
  return Effect.acquireRelease(
    Effect.sync(
      () =>
        new S3Client({
          region: config.region,
          credentials,
          maxAttempts: 1,
          requestChecksumCalculation: "WHEN_REQUIRED",
          responseChecksumValidation: "WHEN_REQUIRED",
          requestHandler: {
            connectionTimeout: timeouts.connectMs ?? 10_000,
            socketTimeout: timeouts.idleMs ?? config.request_timeout,
            httpAgent: agent,
            httpsAgent: agent
          },
          ...(config.endpoint === undefined ? {} : { endpoint: config.endpoint, forcePathStyle: true })
        })
    ),
    (client) => Effect.sync(() => client.destroy())
  )
}

/** Everything an operation needs to talk to one bucket and report failures. */
export interface S3Bucket {
  readonly client: S3Client
  readonly bucket: string
  /** Normalized prefix: empty, or ending in `/`. */
  readonly prefix: string
  /** Runs one SDK call, aborting its HTTP request on interruption and mapping failures to `SinkError`. */
  readonly call: <A>(
    operation: string,
    key: string | undefined,
    run: (signal: AbortSignal) => Promise<A>
  ) => Effect.Effect<A, SinkError>
  /** Headers every written object carries: storage class, encryption, tags. */
  readonly objectOptions: ObjectOptions
}

/** The PutObject / CreateMultipartUpload parameters that come from the destination config. */
export interface ObjectOptions {
  readonly StorageClass?: NonNullable<S3Config["storage_class"]>
  readonly ServerSideEncryption?: NonNullable<S3Config["server_side_encryption"]>
  readonly SSEKMSKeyId?: string
  readonly Tagging?: string
}

/** `x-amz-tagging` is a URL query string; `encodeURIComponent` keeps spaces as %20, which S3 expects. */
export const encodeTags = (tags: Readonly<Record<string, string>>): string =>
  Object.entries(tags)
    .map(([key, value]) => `${encodeURIComponent(key)}=${encodeURIComponent(value)}`)
    .join("&")

/** Storage class, encryption and tags of the config, as SDK parameters (absent keys left out). */
export const objectOptionsOf = (config: S3Config): ObjectOptions => ({
  ...(config.storage_class === undefined ? {} : { StorageClass: config.storage_class }),
  ...(config.server_side_encryption === undefined ? {} : { ServerSideEncryption: config.server_side_encryption }),
  ...(config.kms_key_id === undefined ? {} : { SSEKMSKeyId: config.kms_key_id }),
  ...(config.tags === undefined || Object.keys(config.tags).length === 0 ? {} : { Tagging: encodeTags(config.tags) })
})

/** Binds a client to the configured bucket. */
export const bindBucket = (client: S3Client, config: S3Config, credentialsLabel: string): S3Bucket => ({
  client,
  bucket: config.bucket,
  prefix: config.prefix ?? "",
  objectOptions: objectOptionsOf(config),
  call: (operation, key, run) =>
    Effect.tryPromise({
      try: run,
      catch: (cause) =>
        toSinkError(cause, {
          operation,
          bucket: config.bucket,
          key,
          endpoint: config.endpoint,
          credentials: credentialsLabel
        })
    })
})

/**
 * Content-MD5 of a body: S3 rejects the request (BadDigest, retried) if the bytes were corrupted in transit, a
 * check that is otherwise lost when checksums are computed only when required. Undefined on FIPS builds (no MD5).
 */
export const contentMd5 = (bytes: Uint8Array): string | undefined => {
  try {
    return createHash("md5").update(bytes).digest("base64")
  } catch {
    return undefined
  }
}
