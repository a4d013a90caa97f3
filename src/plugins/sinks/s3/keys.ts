import { invalidKeyReason as invalidRelativeKey } from "../../../core/keys.js"
import { invalidKeyMessage } from "../../../core/sink/make.js"
import type { SinkOperation } from "../../../core/sink/primitives.js"
import { usageErrors } from "../../../core/sink/refusal.js"
import { s3Uri } from "./errors.js"

/** S3's limit on the UTF-8 length of a full key (prefix included). */
export const MAX_KEY_BYTES = 1024

/** S3 numbers parts 1..10,000. */
export const MAX_PARTS = 10_000

/** The S3 request behind each operation, for messages. */
const S3_OPERATION: Readonly<Record<SinkOperation, string>> & Readonly<Record<string, string | undefined>> = {
  check: "PutObject",
  put: "PutObject",
  create: "PutObject",
  begin: "CreateMultipartUpload",
  writeBlock: "UploadPart",
  complete: "CompleteMultipartUpload",
  abort: "AbortMultipartUpload",
  list: "ListObjectsV2",
  read: "GetObject",
  readRange: "GetObject",
  sweep: "ListMultipartUploads"
}

/** S3's own limit on a key relative to the prefix (Rivet's key rules are checked by the framework). */
export const keyLengthProblem = (key: string, prefix: string): string | undefined =>
  Buffer.byteLength(prefix + key, "utf8") > MAX_KEY_BYTES ? `prefix + key exceed S3's ${MAX_KEY_BYTES}-byte limit` : undefined

/** Why a key (relative to the prefix) is refused: the shared rules plus S3's length limit. */
export const invalidKeyReason = (key: string, prefix: string): string | undefined =>
  invalidRelativeKey(key) ?? keyLengthProblem(key, prefix)

/** A request refused before or after S3 saw it, naming the S3 request and the full key (prefix included). */
export const s3UsageError = (bucket: string) =>
  usageErrors("s3", (problem) => {
    const request = S3_OPERATION[problem.operation] ?? problem.operation
    return { operation: request, key: problem.key, message: `S3 ${request} ${s3Uri(bucket, problem.key)}: ${problem.message}` }
  })

/** Fails with a non-retryable `SinkError` naming the S3 request and key when the key is refused. */
export const validateKey = (operation: string, bucket: string, prefix: string, key: string) => {
  const reason = invalidKeyReason(key, prefix)
  return reason === undefined
    ? undefined
    : s3UsageError(bucket)({ operation, key: prefix + key, message: invalidKeyMessage(key, reason) })
}
