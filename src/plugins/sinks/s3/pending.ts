import { ListMultipartUploadsCommand } from "@aws-sdk/client-s3"
import * as Effect from "effect/Effect"
import type { PendingUpload, PendingUploads } from "../../../core/plugin.js"
import type { S3Bucket } from "./client.js"
import { abortMultipartUpload } from "./upload.js"

/** The multipart uploads in progress under `prefix + keyPrefix` (every page), keys relative to the prefix. */
const listPending = (s3: S3Bucket, keyPrefix: string) =>
  Effect.gen(function* () {
    const prefix = `${s3.prefix}${keyPrefix}`
    const pending: Array<PendingUpload> = []
    let keyMarker: string | undefined
    let uploadIdMarker: string | undefined
    do {
      const page = yield* s3.call("ListMultipartUploads", prefix === "" ? undefined : prefix, (abortSignal) =>
        s3.client.send(
          new ListMultipartUploadsCommand({
            Bucket: s3.bucket,
            ...(prefix === "" ? {} : { Prefix: prefix }),
            ...(keyMarker === undefined ? {} : { KeyMarker: keyMarker }),
            ...(uploadIdMarker === undefined ? {} : { UploadIdMarker: uploadIdMarker })
          }),
          { abortSignal }
        )
      )
      for (const upload of page.Uploads ?? []) {
        if (upload.Key === undefined || upload.UploadId === undefined || !upload.Key.startsWith(prefix)) continue
        pending.push({ key: upload.Key.slice(s3.prefix.length), id: upload.UploadId })
      }
      const more = page.IsTruncated === true && page.NextKeyMarker !== undefined
      keyMarker = more ? page.NextKeyMarker : undefined
      uploadIdMarker = more ? page.NextUploadIdMarker : undefined
    } while (keyMarker !== undefined)
    return pending
  }).pipe(Effect.withSpan("S3Sink.listPending"))

/** ListMultipartUploads and AbortMultipartUpload, for the runtime's cleanup of uploads no handle completed. */
export const pendingUploadsOf = (s3: S3Bucket): PendingUploads => ({
  list: (keyPrefix) => listPending(s3, keyPrefix),
  abort: (upload) =>
    abortMultipartUpload(s3, `${s3.prefix}${upload.key}`, upload.id).pipe(Effect.withSpan("S3Sink.abortPending"))
})
