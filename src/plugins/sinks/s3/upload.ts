import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  HeadObjectCommand,
  PutObjectCommand,
  UploadPartCommand
} from "@aws-sdk/client-s3"
import * as Effect from "effect/Effect"
import type { RawUpload } from "../../../core/sink/primitives.js"
import { contentMd5, type S3Bucket } from "./client.js"
import { s3UsageError } from "./keys.js"

const body = (bytes: Uint8Array) => {
  const md5 = contentMd5(bytes)
  return { Body: bytes, ContentLength: bytes.byteLength, ...(md5 === undefined ? {} : { ContentMD5: md5 }) }
}

/** Writes a whole object with one PutObject (small objects, manifest.json, _SUCCESS). */
export const putObject = (s3: S3Bucket, key: string, bytes: Uint8Array, contentType: string) => {
  const input = { Bucket: s3.bucket, Key: key, ContentType: contentType, ...body(bytes), ...s3.objectOptions }
  return s3.call("PutObject", key, (abortSignal) => s3.client.send(new PutObjectCommand(input), { abortSignal }))
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

/** The size of an object, or undefined when it cannot be read. */
const objectSize = (s3: S3Bucket, key: string) =>
  s3
    .call("HeadObject", key, (abortSignal) =>
      s3.client.send(new HeadObjectCommand({ Bucket: s3.bucket, Key: key }), { abortSignal })
    )
    .pipe(Effect.map((head) => head.ContentLength), Effect.orElseSucceed(() => undefined))

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
          Effect.catchIf(
            (error) => error.reason === "NotFound",
            (error) => Effect.flatMap(objectSize(s3, key), (found) => (found === size ? Effect.void : error))
          )
        )
    }

    const upload: RawUpload<string> = {
      writePart,
      // S3 cannot complete an upload without parts: an empty object is a plain PutObject.
      complete: (etags, size) =>
        etags.length === 0
          ? Effect.zipRight(abort, putObject(s3, key, new Uint8Array(0), contentType))
          : completeParts(etags, size),
      abort
    }
    return upload
  })
