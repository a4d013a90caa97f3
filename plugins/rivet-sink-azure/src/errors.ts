import { STATUS_CODES } from "node:http"
import { Sink, SinkError, type SinkErrorReason } from "rivet-export/plugin"
import type { AuthSource } from "./auth.js"

/** What a failed Azure call was doing, for the message and the hint. */
export interface AzureErrorContext {
  /** The Blob service operation: `PutBlob`, `PutBlock`, `PutBlockList`, … */
  readonly operation: string
  readonly container: string
  /** The full blob name (prefix included), when the operation is on one blob. */
  readonly blob?: string | undefined
  /** The URI of the container or blob, for the message. */
  readonly uri: string
  readonly auth: AuthSource
  /** Removes secrets from text that came from the SDK. */
  readonly scrub: (text: string) => string
}

interface Classification {
  readonly reason: SinkErrorReason
  readonly retryable: boolean
  readonly hint?: string
}

const TRANSIENT = new Set(["InternalError", "OperationTimedOut", "ServiceUnavailable"])
const PERMISSION = new Set([
  "AuthorizationPermissionMismatch",
  "AuthorizationResourceTypeMismatch",
  "AuthorizationServiceMismatch",
  "AuthorizationSourceIPMismatch",
  "AuthorizationProtocolMismatch",
  "InsufficientAccountPermissions",
  "AuthorizationFailure"
])
const CONFLICT = new Set([
  "ContainerBeingDeleted",
  "ContainerDisabled",
  "LeaseIdMissing",
  "LeaseIdMismatchWithBlobOperation",
  "BlobImmutableDueToPolicy",
  "BlobArchived"
])

const field = (cause: unknown, name: string): unknown =>
  typeof cause === "object" && cause !== null ? (cause as Record<string, unknown>)[name] : undefined

const credentialHint = (auth: AuthSource): string => {
  switch (auth.kind) {
    case "account-key":
      return `Check the account key in $${auth.env} and the account name '${auth.accountName}' (from account_url or account_name): the key must belong to that account. Keys are listed under the storage account's Access keys.`
    case "sas":
      return `The SAS token in $${auth.env} was refused: it may be expired, revoked, malformed, or issued for another account. Generate a new one.`
    case "connection-string":
      return `Check the connection string in $${auth.env}: its AccountName and AccountKey (or SharedAccessSignature) must belong together. Copy it again from the storage account's Access keys.`
  }
}

const permissionHint = (auth: AuthSource, code: string | undefined): string => {
  if (code === "AuthorizationSourceIPMismatch" || code === "AuthorizationFailure") {
    return "The storage account's network rules (firewall, private endpoint) may not allow this client, or the credential lacks a permission."
  }
  return auth.kind === "sas"
    ? "The SAS token needs the permissions create (c), write (w), read (r) and list (l) on the container — plus delete (d) for rivet doctor's probe — and must allow the https protocol and this client's IP."
    : "The credential needs write access to the container (for Entra ID roles: Storage Blob Data Contributor)."
}

/** The error's first line: server messages append RequestId and Time lines. */
const firstLine = (message: string): string => message.split("\n")[0]!.trim().replace(/\.$/, "")

const classify = (
  code: string | undefined,
  status: number | undefined,
  message: string,
  context: AzureErrorContext
): Classification => {
  if (Sink.isNetworkErrorCode(code)) {
    return {
      reason: "Unavailable",
      retryable: true,
      hint: `Could not reach ${context.uri}: check the account URL, DNS and the network.`
    }
  }
  if (code === "ContainerNotFound") {
    return {
      reason: "NotFound",
      retryable: false,
      hint: `The container must already exist; Rivet never creates it. Create it first, e.g. az storage container create --name ${context.container}`
    }
  }
  // Azure says AuthenticationFailed for a bad signature or token; Azurite says AuthorizationFailure with the same text.
  const badSignature = status === 403 && /failed to authenticate/i.test(message)
  if (code === "AuthenticationFailed" || code === "InvalidAuthenticationInfo" || badSignature) {
    return { reason: "InvalidCredentials", retryable: false, hint: credentialHint(context.auth) }
  }
  if (code === "ResourceNotFound" && context.blob === undefined) {
    return { reason: "NotFound", retryable: false, hint: "Check the account name in account_url and the container name." }
  }
  if (status === 404 || code === "BlobNotFound") return { reason: "NotFound", retryable: false }
  if ((code !== undefined && PERMISSION.has(code)) || status === 403) {
    return { reason: "PermissionDenied", retryable: false, hint: permissionHint(context.auth, code) }
  }
  if (status === 429 || code === "ServerBusy") {
    return {
      reason: "RateLimited",
      retryable: true,
      hint: "The storage account is throttling requests; Rivet retries with backoff. Lower upload_concurrency if this persists."
    }
  }
  if ((code !== undefined && TRANSIENT.has(code)) || (status !== undefined && status >= 500)) {
    return { reason: "Unavailable", retryable: true }
  }
  if ((code !== undefined && CONFLICT.has(code)) || status === 409 || status === 412) {
    return { reason: "Conflict", retryable: false }
  }
  if (code === "InvalidBlobOrBlock" || code === "InvalidBlockList") {
    return {
      reason: "Unknown",
      retryable: false,
      hint: "Another writer may be staging blocks for the same blob with different block ids; make sure one export writes each blob, then run again."
    }
  }
  return { reason: "Unknown", retryable: false }
}

/** Maps anything an SDK call threw to a `SinkError` naming the operation, the blob and what to do. */
export const toSinkError = (cause: unknown, context: AzureErrorContext): SinkError => {
  if (cause instanceof SinkError) return cause
  const codeValue = field(cause, "code")
  const statusValue = field(cause, "statusCode")
  const code = typeof codeValue === "string" && codeValue !== "" ? codeValue : undefined
  const status = typeof statusValue === "number" ? statusValue : undefined
  const rawMessage = cause instanceof Error ? cause.message : String(cause)
  const message = context.scrub(rawMessage)
  const { reason, retryable, hint } = classify(code, status, rawMessage, context)
  // HEAD responses carry no body: the SDK's message is then empty or generic.
  const fallback = status === undefined ? "request failed" : (STATUS_CODES[status] ?? "error response")
  const detail = firstLine(message) || fallback
  const tags = [...(code === undefined ? [] : [code]), ...(status === undefined ? [] : [`HTTP ${status}`])]
  return new SinkError({
    plugin: "azure",
    operation: context.operation,
    ...(context.blob === undefined ? {} : { key: context.blob }),
    reason,
    retryable,
    message: `Azure ${context.operation} ${context.uri} failed: ${detail}${tags.length === 0 ? "" : ` (${tags.join(", ")})`}`,
    ...(hint === undefined ? {} : { hint })
  })
}
