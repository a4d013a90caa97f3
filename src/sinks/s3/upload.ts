import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import * as Effect from "effect/Effect"
import { SinkError } from "../../runtime/errors.js"
import type { UploadHandle } from "../../runtime/plugin.js"
import { contentMd5, type S3Bucket } from "./client.js"
import { s3Uri } from "./errors.js"

/** S3 numbers parts 1..10,000. */
export const MAX_PARTS = 10_000

/** Writes a whole object with one PutObject (small objects, manifest.json, _SUCCESS). */
export const putObject = (s3: S3Bucket, key: string, bytes: Uint8Array, contentType: string) => {
  const md5 = contentMd5(bytes)
  return s3.call("PutObject", key, (abortSignal) =>
    s3.client.send(
      new PutObjectCommand({
        Bucket: s3.bucket,
        Key: key,
        Body: bytes,
        ContentLength: bytes.byteLength,
        ContentType: contentType,
        ...(md5 === undefined ? {} : { ContentMD5: md5 }),
        ...s3.objectOptions
      }),
      { abortSignal }
    )
  )
}

const uploadError = (s3: S3Bucket, key: string, operation: string, message: string, hint?: string) =>
  new SinkError({
    plugin: "s3",
    operation,
    key,
    reason: "Unknown",
    retryable: false,
    message: `S3 ${operation} ${s3Uri(s3.bucket, key)}: ${message}`,
    ...(hint === undefined ? {} : { hint })
  })

type State = "open" | "completed" | "aborted"

/** Aborts a multipart upload by id (full key). */
export const abortMultipartUpload = (s3: S3Bucket, key: string, uploadId: string) =>
  s3
    .call("AbortMultipartUpload", key, (abortSignal) =>
      s3.client.send(new AbortMultipartUploadCommand({ Bucket: s3.bucket, Key: key, UploadId: uploadId }), {
        abortSignal
      })
    )
    .pipe(
      // Already gone (aborted before, or removed by a lifecycle rule): the goal — nothing left behind — holds.
      Effect.catchIf(
        (error) => error.reason === "NotFound",
        () => Effect.void
      ),
      Effect.asVoid
    )

/**
 * Starts a multipart upload (eagerly, so a missing bucket or a permission problem surfaces before any data is
 * encoded) and returns its handle. Block `i` is part `i + 1`; re-sending a block replaces that part, so
 * `writeBlock` is idempotent. The ETag and size of every part are kept by part number for `complete`.
 */
export const beginUpload = Effect.fn("S3Sink.begin")(function* (s3: S3Bucket, key: string, contentType: string) {
  const created = yield* s3.call("CreateMultipartUpload", key, (abortSignal) =>
    s3.client.send(
      new CreateMultipartUploadCommand({ Bucket: s3.bucket, Key: key, ContentType: contentType, ...s3.objectOptions }),
      { abortSignal }
    )
  )
  const uploadId = created.UploadId
  if (uploadId === undefined) {
    return yield* uploadError(s3, key, "CreateMultipartUpload", "the response carried no UploadId")
  }
  const parts = new Map<number, { readonly etag: string; readonly size: number }>()
  let state: State = "open"

  const ensureOpen = (operation: string) =>
    state === "open"
      ? Effect.void
      : Effect.fail(uploadError(s3, key, operation, `the upload was already ${state}`))

  const abortUpload = abortMultipartUpload(s3, key, uploadId)

  const writeBlock = Effect.fn("S3Sink.writeBlock")(function* (index: number, bytes: Uint8Array) {
    yield* ensureOpen("UploadPart")
    if (!Number.isInteger(index) || index < 0 || index >= MAX_PARTS) {
      return yield* uploadError(
        s3,
        key,
        "UploadPart",
        `block ${index} is outside S3's limit of ${MAX_PARTS} parts per object`,
        "Raise part_size: an object can hold at most part_size × 10,000 bytes."
      )
    }
    const partNumber = index + 1
    const md5 = contentMd5(bytes)
    const output = yield* s3.call("UploadPart", key, (abortSignal) =>
      s3.client.send(
        new UploadPartCommand({
          Bucket: s3.bucket,
          Key: key,
          UploadId: uploadId,
          PartNumber: partNumber,
          Body: bytes,
          ContentLength: bytes.byteLength,
          ...(md5 === undefined ? {} : { ContentMD5: md5 })
        }),
        { abortSignal }
      )
    )
    if (output.ETag === undefined) {
      return yield* uploadError(s3, key, "UploadPart", `the response for part ${partNumber} carried no ETag`)
    }
    parts.set(partNumber, { etag: output.ETag, size: bytes.byteLength })
  })

  /**
   * A lost response to a successful CompleteMultipartUpload makes the runtime's retry see NoSuchUpload. The object
   * then exists with exactly the size of the parts: accept that as success rather than failing a finished upload.
   */
  const alreadyCompleted = (expectedSize: number) =>
    s3
      .call("HeadObject", key, (abortSignal) =>
        s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }), { abortSignal })
      )
      .pipe(
        Effect.map((head) => head.ContentLength === expectedSize),
        Effect.orElseSucceed(() => false)
      )

  const completeParts = (blockCount: number) =>
    Effect.gen(function* () {
      const listed: Array<{ PartNumber: number; ETag: string }> = []
      let size = 0
      for (let partNumber = 1; partNumber <= blockCount; partNumber++) {
        const part = parts.get(partNumber)
        if (part === undefined) {
          return yield* uploadError(
            s3,
            key,
            "CompleteMultipartUpload",
            `block ${partNumber - 1} (part ${partNumber} of ${blockCount}) was never written`
          )
        }
        listed.push({ PartNumber: partNumber, ETag: part.etag })
        size += part.size
      }
      yield* s3
        .call("CompleteMultipartUpload", key, (abortSignal) =>
          s3.client.send(
            new CompleteMultipartUploadCommand({
              Bucket: s3.bucket,
              Key: key,
              UploadId: uploadId,
              MultipartUpload: { Parts: listed }
            }),
            { abortSignal }
          )
        )
        .pipe(
          Effect.catchIf(
            (error) => error.reason === "NotFound",
            (error) => Effect.flatMap(alreadyCompleted(size), (done) => (done ? Effect.void : Effect.fail(error)))
          )
        )
    })

  const complete = Effect.fn("S3Sink.complete")(function* (blockCount: number) {
    if (state === "completed") return
    yield* ensureOpen("CompleteMultipartUpload")
    if (!Number.isInteger(blockCount) || blockCount < 0 || blockCount > MAX_PARTS) {
      return yield* uploadError(s3, key, "CompleteMultipartUpload", `invalid block count ${blockCount}`)
    }
    if (blockCount === 0) {
      // S3 cannot complete an upload without parts: an empty object is a plain PutObject.
      yield* abortUpload
      yield* putObject(s3, key, new Uint8Array(0), contentType)
    } else {
      yield* completeParts(blockCount)
    }
    state = "completed"
  })

  const abort = Effect.suspend(() => {
    // After complete the object is the result, not debris: aborting must not touch it.
    if (state !== "open") return Effect.void
    return Effect.tap(abortUpload, () => {
      state = "aborted"
    })
  }).pipe(Effect.withSpan("S3Sink.abort"))

  const handle: UploadHandle = { writeBlock, complete, abort }
  return handle
})
