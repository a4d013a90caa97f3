import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import * as Effect from "effect/Effect"
import { createHash } from "node:crypto"
import type { SinkError } from "../../../core/errors.js"
import type { CreateOutcome, WriteReceipt } from "../../../core/plugin.js"
import type { RawUpload } from "../../../core/sink/primitives.js"
import { contentMd5, type S3Bucket } from "./client.js"
import { s3UsageError } from "./keys.js"

const body = (bytes: Uint8Array) => {
  const md5 = contentMd5(bytes)
  return { Body: bytes, ContentLength: bytes.byteLength, ...(md5 === undefined ? {} : { ContentMD5: md5 }) }
}

/**
 * Writes a whole object with one PutObject (small objects, manifest.json, _SUCCESS). Its SHA-256 goes along
 * (`x-amz-checksum-sha256`): S3 refuses bytes that do not match it and echoes it in the response, which is then the
 * receipt of what was stored — all Rivet can know of the object without s3:GetObject.
 */
export const putObject = (s3: S3Bucket, key: string, bytes: Uint8Array, contentType: string): Effect.Effect<WriteReceipt, SinkError> => {
  const sha256 = createHash("sha256").update(bytes).digest()
  const input = {
    Bucket: s3.bucket,
    Key: key,
    ContentType: contentType,
    ...body(bytes),
    ChecksumSHA256: sha256.toString("base64"),
    ...s3.objectOptions
  }
  return s3.call("PutObject", key, (abortSignal) => s3.client.send(new PutObjectCommand(input), { abortSignal })).pipe(
    Effect.flatMap((output) => {
      if (output.ChecksumSHA256 === undefined) return Effect.succeed({})
      const stored = Buffer.from(output.ChecksumSHA256, "base64").toString("hex")
      return stored === sha256.toString("hex")
        ? Effect.succeed({ sha256: stored })
        : Effect.fail(
            s3UsageError(s3.bucket)({
              operation: "put",
              key,
              message: `S3 answered that it stored bytes with SHA-256 ${stored}, not the ${sha256.toString("hex")} sent`
            })
          )
    })
  )
}

/**
 * The ETag S3 gives an object completed from parts with these ETags: the MD5 of the parts' binary MD5s, then `-N`.
 * Undefined when a part's ETag is not an MD5 (some encryption modes): then there is nothing to compare.
 */
const multipartEtag = (etags: ReadonlyArray<string>): string | undefined => {
  const digests = etags.map((etag) => etag.replaceAll('"', ""))
  if (!digests.every((digest) => /^[0-9a-f]{32}$/.test(digest))) return undefined
  try {
    const md5 = createHash("md5")
    for (const digest of digests) md5.update(Buffer.from(digest, "hex"))
    return `${md5.digest("hex")}-${etags.length}`
  } catch {
    return undefined // FIPS builds have no MD5
  }
}

/** Aborts a multipart upload by id (full key); one already gone (aborted, or removed by a lifecycle rule) is fine. */
export const abortMultipartUpload = (s3: S3Bucket, key: string, uploadId: string) => {
  const input = { Bucket: s3.bucket, Key: key, UploadId: uploadId }
  return s3
    .call("AbortMultipartUpload", key, (abortSignal) =>
      s3.client.send(new AbortMultipartUploadCommand(input), { abortSignal })
    )
    .pipe(Effect.catchIf((error) => error.reason === "NotFound", () => Effect.void), Effect.asVoid)
}

/**
 * The size of an object, or undefined when it cannot be read. A HeadObject refused for lack of s3:GetObject fails
 * with that refusal, whose hint names the permission that would have confirmed the object.
 */
const objectSize = (s3: S3Bucket, key: string) =>
  s3
    .call("HeadObject", key, (abortSignal) =>
      s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }), { abortSignal })
    )
    .pipe(
      Effect.map((head) => head.ContentLength),
      Effect.catchIf((error) => error.reason !== "PermissionDenied", () => Effect.succeed(undefined))
    )

/**
 * Starts a multipart upload (eagerly, so a missing bucket or a permission problem surfaces before any data is
 * encoded). Block `i` is part `i + 1`, its receipt the part's ETag; re-sending a block replaces that part.
 */
export const beginUpload = (s3: S3Bucket, key: string, contentType: string) =>
  Effect.gen(function* () {
    const fail = s3UsageError(s3.bucket)
    const create = { Bucket: s3.bucket, Key: key, ContentType: contentType, ...s3.objectOptions }
    const { UploadId } = yield* s3.call("CreateMultipartUpload", key, (abortSignal) =>
      s3.client.send(new CreateMultipartUploadCommand(create), { abortSignal })
    )
    if (UploadId === undefined) return yield* fail({ operation: "begin", key, message: "the response carried no UploadId" })
    const target = { Bucket: s3.bucket, Key: key, UploadId }
    const abort = abortMultipartUpload(s3, key, UploadId)

    const writePart = (index: number, bytes: Uint8Array) =>
      s3
        .call("UploadPart", key, (abortSignal) =>
          s3.client.send(new UploadPartCommand({ ...target, PartNumber: index + 1, ...body(bytes) }), { abortSignal })
        )
        .pipe(
          Effect.filterOrFail(
            (output): output is typeof output & { ETag: string } => output.ETag !== undefined,
            () => fail({ operation: "writeBlock", key, message: `the response for part ${index + 1} carried no ETag` })
          ),
          Effect.map((output) => output.ETag)
        )

    // A lost response to a successful complete makes the retry see NoSuchUpload; the object then exists with
    // exactly the size of the parts, which is success.
    const completeParts = (etags: ReadonlyArray<string>, size: number) => {
      const Parts = etags.map((ETag, index) => ({ PartNumber: index + 1, ETag }))
      return s3
        .call("CompleteMultipartUpload", key, (abortSignal) =>
          s3.client.send(new CompleteMultipartUploadCommand({ ...target, MultipartUpload: { Parts } }), { abortSignal })
        )
        .pipe(
          Effect.flatMap((output) => {
            const expected = multipartEtag(etags)
            return output.ETag === undefined || expected === undefined || output.ETag.replaceAll('"', "") === expected
              ? Effect.void
              : fail({ operation: "complete", key, message: `S3 completed the object with ETag ${output.ETag}, not the ${expected} of the parts sent` })
          }),
          Effect.catchIf(
            (error) => error.reason === "NotFound",
            (error) => Effect.flatMap(objectSize(s3, key), (found) => (found === size ? Effect.void : error))
          )
        )
    }

    const upload: RawUpload<string> = {
      writePart,
      // S3 cannot complete an upload without parts: an empty object is a plain PutObject.
      // Without s3:AbortMultipartUpload the empty upload stays open: the run's own cleanup then reports it.
      complete: (etags, size) =>
        etags.length === 0
          ? Effect.zipRight(
              Effect.catchIf(abort, (error) => error.reason === "PermissionDenied", () => Effect.void),
              Effect.asVoid(putObject(s3, key, new Uint8Array(0), contentType))
            )
          : completeParts(etags, size),
      abort
    }
    return upload
  })

const isPreconditionFailed = (cause: unknown): boolean =>
  typeof cause === "object" &&
  cause !== null &&
  ((cause as { name?: unknown }).name === "PreconditionFailed" ||
    (cause as { $metadata?: { httpStatusCode?: unknown } }).$metadata?.httpStatusCode === 412)

/**
 * Writes a whole object only when its key is free: a PutObject with `If-None-Match: *`, which S3 refuses with 412
 * Precondition Failed when an object is there — `exists`, nothing written.
 */
export const createObject = (s3: S3Bucket, key: string, bytes: Uint8Array, contentType: string): Effect.Effect<CreateOutcome, SinkError> => {
  const input = { Bucket: s3.bucket, Key: key, ContentType: contentType, IfNoneMatch: "*", ...body(bytes), ...s3.objectOptions }
  return s3.call("PutObject", key, (abortSignal) =>
    s3.client.send(new PutObjectCommand(input), { abortSignal }).then(
      (): CreateOutcome => "created",
      (cause: unknown): CreateOutcome | Promise<never> => (isPreconditionFailed(cause) ? "exists" : Promise.reject(cause))
    )
  )
}
