import { STATUS_CODES } from "node:http"
import { describeCause, SinkError, type SinkErrorReason } from "../../../core/errors.js"
import * as Sink from "../../../core/sink/index.js"
import { displayEndpoint } from "./endpoint-guard.js"
import { accessDeniedHint } from "./permissions.js"

/** What a failed S3 call was doing, for the message and the hint. */
export interface S3ErrorContext {
  /** The S3 API operation: `PutObject`, `UploadPart`, … */
  readonly operation: string
  readonly bucket: string
  /** The full object key (prefix included), when the operation is on one object. */
  readonly key?: string | undefined
  /** The custom endpoint, when one is set (MinIO / emulator). */
  readonly endpoint?: string | undefined
  /** Where credentials come from, as {@link describeCredentialSource} names it. */
  readonly credentials: string
}

interface Classification {
  readonly reason: SinkErrorReason
  readonly retryable: boolean
  readonly hint?: string
}

const THROTTLING = new Set(["SlowDown", "TooManyRequests", "Throttling", "ThrottlingException", "RequestLimitExceeded"])
// RequestTimeTooSkewed: the SDK corrects its clock offset from the failed response, so a retry succeeds.
// BadDigest / IncompleteBody: the bytes were damaged or cut in transit.
const TRANSIENT = new Set([
  "InternalError",
  "ServiceUnavailable",
  "RequestTimeout",
  "TimeoutError",
  "RequestTimeTooSkewed",
  "BadDigest",
  "IncompleteBody"
])
const EXPIRED = new Set(["ExpiredToken", "TokenRefreshRequired", "InvalidToken", "ExpiredTokenException"])
const WRONG_REGION = new Set(["AuthorizationHeaderMalformed", "PermanentRedirect", "IllegalLocationConstraintException"])

// @smithy/node-http-handler's socketTimeout error: "the request socket timed out after 2000 ms of inactivity (…)".
const IDLE_TIMEOUT = /socket timed out after (\d+) ms of inactivity/

const seconds = (ms: number): string => (ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`)

const field = (cause: unknown, name: string): unknown =>
  typeof cause === "object" && cause !== null ? (cause as Record<string, unknown>)[name] : undefined

const text = (value: unknown): string | undefined => (typeof value === "string" && value !== "" ? value : undefined)

const httpStatusOf = (cause: unknown): number | undefined => {
  const status = field(field(cause, "$metadata"), "httpStatusCode")
  return typeof status === "number" ? status : undefined
}

const classify = (
  name: string,
  code: string | undefined,
  status: number | undefined,
  cause: unknown,
  context: S3ErrorContext
): Classification => {
  const custom = context.endpoint !== undefined
  if (name === "CredentialsProviderError" || name === "TokenProviderError") {
    return {
      reason: "InvalidCredentials",
      retryable: false,
      hint: `Rivet could not load credentials from ${context.credentials}. Set AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, configure ~/.aws/credentials, run with an instance or container role, or set access_key_env/secret_key_env or aws_profile on the destination.`
    }
  }
  const bucketProbe = context.operation === "HeadBucket" || context.operation === "GetBucketLocation"
  if (name === "NoSuchBucket" || (status === 404 && bucketProbe)) {
    return {
      reason: "NotFound",
      retryable: false,
      hint: `The bucket must already exist. Create it first: aws s3 mb s3://${context.bucket}`
    }
  }
  if (name === "NoSuchUpload") {
    return {
      reason: "NotFound",
      retryable: false,
      hint: "The multipart upload no longer exists: it was aborted or completed, or a bucket lifecycle rule removed it."
    }
  }
  if (name === "NoSuchKey" || name === "NotFound" || status === 404) return { reason: "NotFound", retryable: false }
  if (name === "SignatureDoesNotMatch") {
    return {
      reason: "InvalidCredentials",
      retryable: false,
      hint: custom
        ? "Ensure region is set (even for MinIO, e.g. us-east-1), and that the secret key matches the access key."
        : `Check the secret access key from ${context.credentials}: it does not match the access key id.`
    }
  }
  if (name === "InvalidAccessKeyId") {
    return {
      reason: "InvalidCredentials",
      retryable: false,
      hint: `The access key id from ${context.credentials} is not known to this endpoint: check it (a temporary ASIA… key also needs its session token).`
    }
  }
  if (EXPIRED.has(name)) {
    return {
      reason: "InvalidCredentials",
      retryable: false,
      hint: `The session token from ${context.credentials} is expired or invalid: refresh the temporary credentials.`
    }
  }
  if (WRONG_REGION.has(name) || status === 301) {
    return {
      reason: "Unknown",
      retryable: false,
      hint: `The bucket is in another region: set region to the bucket's region (aws s3api get-bucket-location --bucket ${context.bucket}).`
    }
  }
  if (name === "AccessDenied" || name === "AllAccessDisabled" || name === "Forbidden" || status === 403) {
    return { reason: "PermissionDenied", retryable: false, hint: accessDeniedHint(context.operation) }
  }
  if (THROTTLING.has(name) || status === 429) return { reason: "RateLimited", retryable: true }
  if (status === 503) return { reason: "RateLimited", retryable: true }
  const network = Sink.isNetworkErrorCode(code) || /socket hang up/i.test(describeCause(cause))
  if (network || TRANSIENT.has(name) || (status !== undefined && status >= 500)) {
    return {
      reason: "Unavailable",
      retryable: true,
      ...(code === "ECONNREFUSED" && custom
        ? { hint: `Nothing answered at ${displayEndpoint(context.endpoint ?? "")}: is the S3 emulator running?` }
        : {})
    }
  }
  if (field(cause, "$retryable") !== undefined) return { reason: "Unavailable", retryable: true }
  return { reason: "Unknown", retryable: false }
}

/** The `s3://bucket/key` (or `s3://bucket/`) an operation was about. */
export const s3Uri = (bucket: string, key?: string): string => `s3://${bucket}/${key ?? ""}`

/** A request that moved no bytes for `request_timeout`: retryable, and the message names the key to raise. */
const idleTimeout = (context: S3ErrorContext, ms: number): SinkError =>
  new SinkError({
    plugin: "s3",
    operation: context.operation,
    ...(context.key === undefined ? {} : { key: context.key }),
    reason: "Unavailable",
    retryable: true,
    message: `S3 ${context.operation} ${s3Uri(context.bucket, context.key)} failed: no bytes sent or received for ${seconds(ms)}, the destination's request_timeout (TimeoutError)`,
    hint: `The endpoint stopped responding mid-request; timed-out requests are retried. If the link or endpoint is merely slow, raise request_timeout on the destination (now ${seconds(ms)}).`
  })

/**
 * Maps an AWS SDK failure (service error, credential-provider error, network error or timeout) to a `SinkError`
 * whose message names the operation and the object, and whose `retryable` tells the runtime whether to retry.
 */
export const toSinkError = (cause: unknown, context: S3ErrorContext): SinkError => {
  const name = text(field(cause, "name")) ?? text(field(cause, "Code")) ?? "Error"
  const code = text(field(cause, "code")) ?? text(field(cause, "Code"))
  const status = httpStatusOf(cause)
  const idle = name === "TimeoutError" ? IDLE_TIMEOUT.exec(describeCause(cause)) : null
  if (idle !== null) return idleTimeout(context, Number(idle[1]))
  const { hint, reason, retryable } = classify(name, code, status, cause, context)
  // A response without an S3 error body (HEAD, a proxy's 503) leaves the SDK with only "UnknownError".
  const bodiless = name === "Unknown" || describeCause(cause) === "UnknownError"
  const detail =
    bodiless && status !== undefined
      ? (STATUS_CODES[status] ?? "error response")
      : describeCause(cause).replace(/\.$/, "")
  const tags = [
    ...(bodiless ? [] : [name]),
    ...(code !== undefined && code !== name ? [code] : []),
    ...(status ? [`HTTP ${status}`] : [])
  ]
  return new SinkError({
    plugin: "s3",
    operation: context.operation,
    ...(context.key === undefined ? {} : { key: context.key }),
    reason,
    retryable,
    message: `S3 ${context.operation} ${s3Uri(context.bucket, context.key)} failed: ${detail}${tags.length === 0 ? "" : ` (${tags.join(", ")})`}`,
    ...(hint === undefined ? {} : { hint }),
    cause
  })
}
