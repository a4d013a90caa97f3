import * as Schema from "effect/Schema"
import { DurationMs } from "../../../core/duration.js"
import { describedString, envVarNameField, normalizePrefix, prefixField, uploadConcurrencyField } from "../../../core/sink/config.js"
import { ByteSize, formatBytes } from "../../../core/size.js"
import { placeholderProblem } from "../placeholders.js"
import { checkEndpoint, endpointUrlProblem } from "./endpoint-guard.js"

const MiB = 1024 ** 2
const GiB = 1024 ** 3

/** S3's smallest part (every part but the last must be at least this big). */
export const MIN_PART_SIZE = 5 * MiB
/** S3's largest part. */
export const MAX_PART_SIZE = 5 * GiB
/** `part_size` when not set. */
export const DEFAULT_PART_SIZE = 8 * MiB
/** `request_timeout` when not set: long enough for a slow link, short enough that a dead one is noticed. */
export const DEFAULT_REQUEST_TIMEOUT_MS = 120_000
const MAX_REQUEST_TIMEOUT_MS = 24 * 86_400_000

const text = describedString

const bucketProblem = (bucket: string): string | undefined => {
  if (bucket === "") return "bucket must not be empty: name an existing bucket, e.g. my-data-bucket"
  if (/^s3:\/\//i.test(bucket)) {
    return `bucket '${bucket}' must be the bare bucket name, without s3:// (put any folder path in prefix:)`
  }
  if (bucket.includes("/")) {
    return `bucket '${bucket}' must be the bare bucket name: put the folder part in prefix: instead`
  }
  if (!/^[A-Za-z0-9][A-Za-z0-9._-]*[A-Za-z0-9]$/.test(bucket) || bucket.length < 3 || bucket.length > 255) {
    return `bucket '${bucket}' is not a valid bucket name: use 3–63 lowercase letters, digits, dots and hyphens, starting and ending with a letter or digit`
  }
  return undefined
}

/** Why a prefix cannot be used: parent segments, templates, or characters that make a key unreadable or path-like on Windows. */
const prefixProblem = (prefix: string): string | undefined => {
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f]/.test(prefix)) return `prefix ${JSON.stringify(prefix)} must not contain control characters (NUL, newline, tab, …)`
  if (prefix.includes("\\")) return `prefix ${JSON.stringify(prefix)} must not contain '\\': separate folders with /, e.g. exports/daily/`
  // Leading slashes are dropped and one trailing slash is the folder end; every segment between must be a name.
  const segments = prefix.replace(/^\/+/, "").replace(/\/$/, "").split("/")
  if (segments.includes("..")) {
    return `prefix '${prefix}' must not contain '..' segments: S3 keys have no parent directories; write the folder path you want, e.g. exports/daily/`
  }
  // S3 stores `a/./b/` and `a//b/` literally while readers and tools normalise them: the manifest would not be found.
  if (segments.includes(".")) {
    return `prefix '${prefix}' must not contain '.' segments: S3 stores them literally, so tools that normalise the path look elsewhere; write the folder path without them, e.g. exports/daily/`
  }
  if (segments.length > 1 && segments.includes("")) {
    return `prefix '${prefix}' must not contain empty segments ('//'): S3 stores them literally, so tools that normalise the path look elsewhere; separate folders with a single /, e.g. exports/daily/`
  }
  return placeholderProblem("prefix", prefix)
}

export { normalizePrefix }

const envVarName = (key: string, description: string) =>
  envVarNameField({
    key,
    description,
    example: "AWS_ACCESS_KEY_ID",
    looksLikeSecret: (name) => /^(AKIA|ASIA)[A-Z0-9]{12,}$/.test(name),
    secret: { what: "an access key", holding: "the key", noun: "key" }
  })

const nonEmpty = (key: string, description: string, example?: string) =>
  text(description).pipe(
    Schema.filter((value) =>
      value === "" ? `${key} must not be empty${example === undefined ? "" : `, e.g. ${example}`}` : true
    )
  )

/** S3 storage classes a PutObject / CreateMultipartUpload accepts. */
export const StorageClass = Schema.Literal(
  "STANDARD",
  "STANDARD_IA",
  "ONEZONE_IA",
  "INTELLIGENT_TIERING",
  "GLACIER_IR",
  "GLACIER",
  "DEEP_ARCHIVE",
  "REDUCED_REDUNDANCY"
)

const tagsProblem = (tags: Readonly<Record<string, string>>): string | undefined => {
  const entries = Object.entries(tags)
  if (entries.length > 10) return `tags: S3 allows at most 10 tags per object, got ${entries.length}`
  for (const [key, value] of entries) {
    if (key.length < 1 || key.length > 128) return `tags: key '${key}' must be 1 to 128 characters long`
    if (value.length > 256) return `tags: value of '${key}' must be at most 256 characters long`
  }
  return undefined
}

const fields = {
  bucket: Schema.propertySignature(
    text("S3 bucket name. The bucket must already exist; Rivet never creates it.").pipe(
      Schema.filter((bucket) => bucketProblem(bucket) ?? true)
    )
  ).annotations({
    missingMessage: () => "bucket is required: the name of an existing S3 bucket, e.g. my-data-bucket"
  }),
  prefix: prefixField(
    "Key prefix (folder-like path) under which objects are written, e.g. exports/daily/. A missing trailing / is added, a leading / removed; '.', '..' and empty ('//') segments and placeholders such as {date} or {export} (not expanded) are rejected.",
    prefixProblem
  ),
  region: Schema.propertySignature(
    nonEmpty(
      "region",
      "AWS region of the bucket, e.g. us-east-1. Required; with a custom endpoint (MinIO) it is still required but can be any value.",
      "us-east-1"
    )
  ).annotations({
    missingMessage: () =>
      "region is required: the bucket's AWS region, e.g. us-east-1 (with a custom endpoint such as MinIO it is required but can be any value, e.g. us-east-1)"
  }),
  endpoint: Schema.optionalWith(
    text(
      "Custom S3-compatible endpoint for a local emulator, e.g. http://localhost:9000 (MinIO). Only loopback hosts (localhost, 127.x.x.x, [::1]) are accepted unless allow_anonymous is true."
    ).pipe(Schema.filter((endpoint) => endpointUrlProblem(endpoint) ?? true)),
    { exact: true }
  ),
  access_key_env: Schema.optionalWith(
    envVarName(
      "access_key_env",
      "Name of the environment variable holding the access key id. Set together with secret_key_env."
    ),
    { exact: true }
  ),
  secret_key_env: Schema.optionalWith(
    envVarName(
      "secret_key_env",
      "Name of the environment variable holding the secret access key. Set together with access_key_env."
    ),
    { exact: true }
  ),
  session_token_env: Schema.optionalWith(
    envVarName(
      "session_token_env",
      "Name of the environment variable holding a session token (temporary ASIA… credentials). Only with access_key_env and secret_key_env."
    ),
    { exact: true }
  ),
  aws_profile: Schema.optionalWith(
    nonEmpty(
      "aws_profile",
      "Profile from the shared AWS credentials/config files (~/.aws/credentials, AWS_SHARED_CREDENTIALS_FILE). Not combinable with access_key_env/secret_key_env."
    ),
    { exact: true }
  ),
  allow_anonymous: Schema.optionalWith(
    Schema.Boolean.annotations({
      description:
        "Waives the loopback-only endpoint guard. Meant for anonymous local emulators; configured credentials still sign requests. Untested against real S3-compatible services."
    }),
    { exact: true }
  ),
  part_size: Schema.optionalWith(
    ByteSize.pipe(
      Schema.filter((bytes) =>
        bytes >= MIN_PART_SIZE && bytes <= MAX_PART_SIZE
          ? true
          : `part_size ${formatBytes(bytes)} is outside S3's limits: use 5MiB to 5GiB (default 8MiB)`
      )
    ),
    { exact: true, default: () => DEFAULT_PART_SIZE }
  ).annotations({ description: "Multipart part size, 5MiB to 5GiB, e.g. 16MiB. Default 8MiB." }),
  upload_concurrency: uploadConcurrencyField("Parts of one object uploaded at once, 1 to 64. Default 4."),
  request_timeout: Schema.optionalWith(
    DurationMs.pipe(
      Schema.filter((ms) =>
        ms <= 0
          ? "request_timeout must be greater than 0, e.g. 120s"
          : // Node timers hold at most 2^31 − 1 ms; a longer one would fire at once.
            ms > MAX_REQUEST_TIMEOUT_MS
            ? "request_timeout must be at most 24d"
            : true
      )
    ),
    { exact: true, default: () => DEFAULT_REQUEST_TIMEOUT_MS }
  ).annotations({
    description:
      "Fail (and retry) a request after this long without any bytes sent or received, e.g. 30s. Default 120s. An idle timeout, not a total one: a large part on a slow link is never cut off while bytes flow."
  }),
  storage_class: Schema.optionalWith(
    StorageClass.annotations({
      description: "S3 storage class of written objects, e.g. STANDARD_IA. Default: STANDARD."
    }),
    { exact: true }
  ),
  server_side_encryption: Schema.optionalWith(
    Schema.Literal("AES256", "aws:kms").annotations({
      description: "Server-side encryption of written objects: AES256 (SSE-S3) or aws:kms (SSE-KMS)."
    }),
    { exact: true }
  ),
  kms_key_id: Schema.optionalWith(
    nonEmpty("kms_key_id", "KMS key id or ARN for SSE-KMS. Only with server_side_encryption: aws:kms."),
    { exact: true }
  ),
  tags: Schema.optionalWith(
    Schema.Record({ key: Schema.String, value: Schema.String })
      .annotations({ description: "Object tags (at most 10, string values), sent with every object Rivet writes." })
      .pipe(Schema.filter((tags) => tagsProblem(tags) ?? true)),
    { exact: true }
  )
}

type Fields = Schema.Struct.Type<typeof fields>

const crossFieldIssues = (config: Fields): ReadonlyArray<Schema.FilterIssue> => {
  const issues: Array<Schema.FilterIssue> = []
  const hasAccess = config.access_key_env !== undefined
  const hasSecret = config.secret_key_env !== undefined
  if (hasAccess !== hasSecret) {
    issues.push({
      path: [hasAccess ? "secret_key_env" : "access_key_env"],
      message: "access_key_env and secret_key_env must be set together (both or neither)"
    })
  }
  if (config.session_token_env !== undefined && !(hasAccess && hasSecret)) {
    issues.push({
      path: ["session_token_env"],
      message: "session_token_env is only used with access_key_env and secret_key_env: set the pair too, or remove it"
    })
  }
  if ((hasAccess || hasSecret) && config.aws_profile !== undefined) {
    issues.push({
      path: ["aws_profile"],
      message: "choose one: access_key_env/secret_key_env or aws_profile"
    })
  }
  if (config.kms_key_id !== undefined && config.server_side_encryption !== "aws:kms") {
    issues.push({
      path: ["kms_key_id"],
      message: "kms_key_id is only used with server_side_encryption: aws:kms"
    })
  }
  if (config.endpoint !== undefined) {
    const verdict = checkEndpoint(config.endpoint, config.allow_anonymous === true)
    if (!verdict.ok) issues.push({ path: ["endpoint"], message: verdict.reason })
  }
  return issues
}

/**
 * The `destination:` block of an S3 export (without `type`). Decoding normalizes `prefix`, applies defaults and
 * runs the endpoint guard — all before any network I/O.
 */
export const S3Config = Schema.Struct(fields)
  .pipe(Schema.filter((config) => crossFieldIssues(config)))
  .annotations({
    identifier: "S3Destination",
    description: "Amazon S3, or a loopback S3-compatible emulator such as MinIO."
  })

/** The decoded S3 destination config. */
export type S3Config = typeof S3Config.Type
