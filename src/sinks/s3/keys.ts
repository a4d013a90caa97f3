import { SinkError } from "../../runtime/errors.js"
import { invalidKeyReason as invalidRelativeKey } from "../../runtime/keys.js"
import { s3Uri } from "./errors.js"

/** S3's limit on the UTF-8 length of a full key (prefix included). */
export const MAX_KEY_BYTES = 1024

/** Why a key (relative to the prefix) is refused: the shared rules plus S3's length limit. */
export const invalidKeyReason = (key: string, prefix: string): string | undefined =>
  invalidRelativeKey(key) ??
  (Buffer.byteLength(prefix + key, "utf8") > MAX_KEY_BYTES ? `prefix + key exceed S3's ${MAX_KEY_BYTES}-byte limit` : undefined)

/** Fails with a non-retryable `SinkError` naming the operation and key when the key is refused. */
export const validateKey = (operation: string, bucket: string, prefix: string, key: string) => {
  const reason = invalidKeyReason(key, prefix)
  return reason === undefined
    ? undefined
    : new SinkError({
        plugin: "s3",
        operation,
        key: prefix + key,
        reason: "Unknown",
        retryable: false,
        message: `S3 ${operation} ${s3Uri(bucket, prefix + key)}: invalid key ${JSON.stringify(key)}: ${reason}`
      })
}
