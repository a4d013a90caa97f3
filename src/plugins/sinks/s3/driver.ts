import {
  DeleteObjectCommand,
  GetBucketLocationCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  ListObjectsV2Command
} from "@aws-sdk/client-s3"
import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { SinkError } from "../../../core/errors.js"
import type { PluginContext, SinkDriverShape, StoredObject } from "../../../core/plugin.js"
import * as Sink from "../../../core/sink/index.js"
import { bindBucket, makeS3Client, type S3Bucket, type S3Timeouts } from "./client.js"
import type { S3Config } from "./config.js"
import { credentialSourceOf, describeCredentialSource, resolveCredentials } from "./credentials.js"
import { s3Uri, toSinkError } from "./errors.js"
import { keyLengthProblem, MAX_PARTS, s3UsageError } from "./keys.js"
import { pendingUploadsOf } from "./pending.js"
import { beginUpload, createObject, putObject } from "./upload.js"

/** Options that are not user config: tests shorten the network timeouts. */
export interface S3DriverOptions {
  readonly timeouts?: S3Timeouts
}

/**
 * Reachability: GetBucketLocation — the permission the docs ask for — rather than HeadBucket, whose bodiless 403
 * cannot tell a bad signature from a missing permission. The framework then writes its probe with the same
 * storage class, encryption and tags as real objects.
 */
const bucketLocation = (s3: S3Bucket) =>
  Effect.asVoid(
    s3.call("GetBucketLocation", undefined, (abortSignal) =>
      s3.client.send(new GetBucketLocationCommand({ Bucket: s3.bucket }), { abortSignal })
    )
  )

/** Every object under the prefix (paginated), keys relative to it. */
const listObjects = (s3: S3Bucket) =>
  Effect.gen(function* () {
    const objects: Array<StoredObject> = []
    let token: string | undefined
    do {
      const page = yield* s3.call("ListObjectsV2", s3.prefix === "" ? undefined : s3.prefix, (abortSignal) =>
        s3.client.send(
          new ListObjectsV2Command({
            Bucket: s3.bucket,
            ...(s3.prefix === "" ? {} : { Prefix: s3.prefix }),
            ...(token === undefined ? {} : { ContinuationToken: token })
          }),
          { abortSignal }
        )
      )
      for (const item of page.Contents ?? []) {
        if (item.Key === undefined || !item.Key.startsWith(s3.prefix)) continue
        objects.push({ key: item.Key.slice(s3.prefix.length), size: item.Size ?? 0 })
      }
      token = page.IsTruncated === true ? page.NextContinuationToken : undefined
    } while (token !== undefined)
    return objects
  })

type Body = NonNullable<GetObjectCommandOutput["Body"]>

const isNodeStream = (body: Body): body is Body & AsyncIterable<Uint8Array> & { destroy: () => void } =>
  Symbol.asyncIterator in body && typeof (body as { destroy?: unknown }).destroy === "function"

/** GetObject streamed: the response body is released when the stream ends, fails or is interrupted. */
const readObject = (s3: S3Bucket, key: string, onError: (cause: unknown) => SinkError) =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const output = yield* Effect.acquireRelease(
        s3.call("GetObject", key, (abortSignal) =>
          s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key }), { abortSignal })
        ),
        (output) => Effect.sync(() => (output.Body && isNodeStream(output.Body) ? output.Body.destroy() : undefined))
      )
      const body = output.Body
      if (body === undefined) return Stream.empty
      if (!isNodeStream(body)) return yield* onError(new Error("the response body is not a Node.js stream"))
      return Stream.fromAsyncIterable(body, onError)
    })
  )

/** GetObject of one byte range, read whole (a Parquet footer: a few KiB). */
const readObjectRange = (s3: S3Bucket, key: string, offset: number, length: number) =>
  s3.call("GetObject", key, async (abortSignal) => {
    const range = `bytes=${offset}-${offset + length - 1}`
    const output = await s3.client.send(new GetObjectCommand({ Bucket: s3.bucket, Key: key, Range: range }), { abortSignal })
    return output.Body === undefined ? new Uint8Array(0) : output.Body.transformToByteArray()
  })

/**
 * The S3 driver: an S3 client scoped to the layer, bound to one bucket and prefix, exposing the sink primitives.
 * Fails (before any network I/O) when an env var named by access_key_env/secret_key_env is unset.
 */
export const makeS3Driver = (
  config: S3Config,
  context: PluginContext,
  options: S3DriverOptions = {}
): Effect.Effect<SinkDriverShape, SinkError, Scope.Scope> =>
  Effect.gen(function* () {
    const source = credentialSourceOf(config)
    const credentials = yield* resolveCredentials(source, context.env)
    const client = yield* makeS3Client(config, credentials, options.timeouts)
    const s3 = bindBucket(client, config, describeCredentialSource(source))
    const fullKey = (key: string) => `${s3.prefix}${key}`
    const streamError = (key: string) => (cause: unknown) =>
      toSinkError(cause, {
        operation: "GetObject",
        bucket: config.bucket,
        key,
        endpoint: config.endpoint,
        credentials: describeCredentialSource(source)
      })
    const usageError = s3UsageError(config.bucket)

    return Sink.make({
      spanPrefix: "S3Sink",
      label: `S3(${config.bucket})`,
      uri: (key) => s3Uri(config.bucket, fullKey(key ?? "")),
      capabilities: { markers: true, blockSize: config.part_size, concurrency: config.upload_concurrency, releasesBytes: true },
      usageError: (problem) => usageError({ ...problem, key: fullKey(problem.key) }),
      keyProblem: (key) => keyLengthProblem(key, s3.prefix),
      uploads: {
        maxParts: { count: MAX_PARTS, hint: "Raise part_size: an object can hold at most part_size × 10,000 bytes." },
        describePart: (index, count) => `block ${index} (part ${index + 1} of ${count})`
      },
      check: bucketLocation(s3),
      // s3:DeleteObject is not a permission Rivet requires: the framework removes the probe on a best-effort basis.
      probe: {
        remove: (key) =>
          s3.call("DeleteObject", fullKey(key), (abortSignal) =>
            s3.client.send(new DeleteObjectCommand({ Bucket: s3.bucket, Key: fullKey(key) }), { abortSignal })
          )
      },
      put: (key, bytes, contentType) => putObject(s3, fullKey(key), bytes, contentType),
      create: (key, bytes, contentType) => createObject(s3, fullKey(key), bytes, contentType),
      begin: (key, contentType) => beginUpload(s3, fullKey(key), contentType),
      list: listObjects(s3),
      pendingUploads: pendingUploadsOf(s3),
      read: (key) => readObject(s3, fullKey(key), streamError(fullKey(key))),
      readRange: (key, offset, length) => readObjectRange(s3, fullKey(key), offset, length)
    })
  })
