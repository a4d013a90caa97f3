import { RestError } from "@azure/storage-blob"
import * as Redacted from "effect/Redacted"
import { describe, expect, it } from "vitest"
import { scrubSecret } from "../src/auth.js"
import { toSinkError } from "../src/errors.js"

const context = {
  operation: "PutBlock",
  container: "exports",
  blob: "daily/orders.csv",
  uri: "https://myaccount.blob.core.windows.net/exports/daily/orders.csv",
  auth: { kind: "sas", env: "AZURE_STORAGE_SAS_TOKEN", accountUrl: "https://myaccount.blob.core.windows.net" },
  scrub: (text: string) => text
} as const

const mapped = (code: string | undefined, statusCode: number | undefined, message = "Service said no.\nRequestId:1") =>
  toSinkError(new RestError(message, { ...(code ? { code } : {}), ...(statusCode ? { statusCode } : {}) }), context)

// Throttling and server faults cannot be provoked from Azurite; the mapping of the SDK's own error type is pure.
describe("Azure error mapping", () => {
  it.each([
    ["ServerBusy", 503, "RateLimited", true],
    [undefined, 429, "RateLimited", true],
    ["InternalError", 500, "Unavailable", true],
    ["OperationTimedOut", 500, "Unavailable", true],
    [undefined, 502, "Unavailable", true],
    ["ECONNRESET", undefined, "Unavailable", true],
    ["REQUEST_SEND_ERROR", undefined, "Unavailable", true],
    ["AuthenticationFailed", 403, "InvalidCredentials", false],
    ["AuthorizationPermissionMismatch", 403, "PermissionDenied", false],
    ["ContainerNotFound", 404, "NotFound", false],
    ["BlobNotFound", 404, "NotFound", false],
    ["LeaseIdMissing", 412, "Conflict", false],
    ["InvalidBlockList", 400, "Unknown", false]
  ] as const)("%s / HTTP %s → %s (retryable: %s)", (code, status, reason, retryable) => {
    expect(mapped(code, status)).toMatchObject({ plugin: "azure", operation: "PutBlock", reason, retryable })
  })

  it("names the operation, the blob URI, the code and the status, with the first line of the message", () => {
    const error = mapped("AuthorizationPermissionMismatch", 403, "This request is not authorized.\nRequestId:abc\nTime:x")
    expect(error.message).toBe(
      "Azure PutBlock https://myaccount.blob.core.windows.net/exports/daily/orders.csv failed: This request is not authorized (AuthorizationPermissionMismatch, HTTP 403)"
    )
    expect(error.key).toBe("daily/orders.csv")
    expect(error.hint).toMatch(/SAS token needs the permissions create \(c\), write \(w\)/)
  })

  it("scrubs a secret, whole or in parts, plain or URL-encoded", () => {
    const secret = Redacted.make("sv=2024-01-01&sig=abc+def/ghijklmn")
    expect(scrubSecret("url ...?sv=2024-01-01&sig=abc%2Bdef%2Fghijklmn failed", secret)).toBe("url ...?sv=***&sig=*** failed")
    const connection = Redacted.make("AccountName=acct;AccountKey=c2VjcmV0c2VjcmV0c2VjcmV0")
    expect(scrubSecret("bad key c2VjcmV0c2VjcmV0c2VjcmV0", connection)).toBe("bad key ***")
  })
})
