import { S3ServiceException } from "@aws-sdk/client-s3"
import { describe, expect, it } from "@effect/vitest"
import { toSinkError, type S3ErrorContext } from "../../../../src/plugins/sinks/s3/errors.js"

const aws: S3ErrorContext = {
  operation: "PutObject",
  bucket: "my-data-bucket",
  key: "exports/daily/orders.parquet",
  credentials: "the AWS default credential chain"
}
const minio: S3ErrorContext = { ...aws, endpoint: "http://user:pw@localhost:9000" }

/** A service error as the SDK builds it from an S3 error response. */
const serviceError = (name: string, status: number, message = `${name} message`) =>
  new S3ServiceException({ name, $fault: status >= 500 ? "server" : "client", $metadata: { httpStatusCode: status }, message })

const networkError = (message: string, code: string) => Object.assign(new Error(message), { code })

describe("toSinkError", () => {
  it("names the operation and the object in the message", () => {
    const error = toSinkError(serviceError("NoSuchBucket", 404, "The specified bucket does not exist"), aws)
    expect(error.message).toBe(
      "S3 PutObject s3://my-data-bucket/exports/daily/orders.parquet failed: The specified bucket does not exist (NoSuchBucket, HTTP 404)"
    )
    expect(error.key).toBe("exports/daily/orders.parquet")
    expect(error.plugin).toBe("s3")
    expect(error.hint).toBe("The bucket must already exist. Create it first: aws s3 mb s3://my-data-bucket")
  })

  it("tells a bad secret on AWS from a missing region on MinIO", () => {
    expect(toSinkError(serviceError("SignatureDoesNotMatch", 403), minio).hint).toContain(
      "Ensure region is set (even for MinIO, e.g. us-east-1)"
    )
    expect(toSinkError(serviceError("SignatureDoesNotMatch", 403), aws).hint).toBe(
      "Check the secret access key from the AWS default credential chain: it does not match the access key id."
    )
  })

  it.each([
    ["HeadBucket 404 without a body", "NotFound", 404, "HeadBucket", "NotFound", false],
    ["GetObject NoSuchKey", "NoSuchKey", 404, "GetObject", "NotFound", false],
    ["NoSuchUpload", "NoSuchUpload", 404, "UploadPart", "NotFound", false],
    ["AccessDenied", "AccessDenied", 403, "PutObject", "PermissionDenied", false],
    ["bodiless 403", "Forbidden", 403, "HeadObject", "PermissionDenied", false],
    ["ExpiredToken", "ExpiredToken", 400, "PutObject", "InvalidCredentials", false],
    ["wrong region", "AuthorizationHeaderMalformed", 400, "PutObject", "Unknown", false],
    ["SlowDown", "SlowDown", 503, "UploadPart", "RateLimited", true],
    ["bodiless 503", "Unknown", 503, "UploadPart", "RateLimited", true],
    ["InternalError", "InternalError", 500, "UploadPart", "Unavailable", true],
    ["502", "BadGateway", 502, "UploadPart", "Unavailable", true],
    ["RequestTimeout", "RequestTimeout", 400, "UploadPart", "Unavailable", true],
    ["BadDigest", "BadDigest", 400, "UploadPart", "Unavailable", true],
    ["EntityTooSmall", "EntityTooSmall", 400, "CompleteMultipartUpload", "Unknown", false]
  ] as const)("maps %s", (_label, name, status, operation, reason, retryable) => {
    const error = toSinkError(serviceError(name, status), { ...aws, operation })
    expect({ reason: error.reason, retryable: error.retryable }).toEqual({ reason, retryable })
  })

  it("maps a bodiless response by its status text", () => {
    const error = toSinkError(serviceError("Unknown", 503, "UnknownError"), aws)
    expect(error.message).toBe("S3 PutObject s3://my-data-bucket/exports/daily/orders.parquet failed: Service Unavailable (HTTP 503)")
  })

  it.each([
    ["ECONNRESET", "socket hang up"],
    ["ETIMEDOUT", "connect ETIMEDOUT"],
    ["EPIPE", "write EPIPE"],
    ["ENOTFOUND", "getaddrinfo ENOTFOUND s3.example"]
  ])("treats %s as retryable", (code, message) => {
    const error = toSinkError(networkError(message, code), aws)
    expect(error.reason).toBe("Unavailable")
    expect(error.retryable).toBe(true)
  })

  it("treats timeouts as retryable and names a dead emulator without its password", () => {
    const timeout = Object.assign(new Error("the request socket timed out"), { name: "TimeoutError" })
    expect(toSinkError(timeout, aws).retryable).toBe(true)
    const refused = toSinkError(networkError("connect ECONNREFUSED 127.0.0.1:9000", "ECONNREFUSED"), minio)
    expect(refused.retryable).toBe(true)
    expect(refused.hint).toBe("Nothing answered at http://***@localhost:9000: is the S3 emulator running?")
  })

  it("names request_timeout for an idle socket, but not for a connection that never opened", () => {
    const idle = toSinkError(
      Object.assign(
        new Error(
          "@smithy/node-http-handler - the request socket timed out after 120000 ms of inactivity (configured by client requestHandler)."
        ),
        { name: "TimeoutError" }
      ),
      aws
    )
    expect(idle).toMatchObject({ reason: "Unavailable", retryable: true })
    expect(idle.message).toBe(
      "S3 PutObject s3://my-data-bucket/exports/daily/orders.parquet failed: no bytes sent or received for 120s, the destination's request_timeout (TimeoutError)"
    )
    expect(idle.hint).toContain("raise request_timeout on the destination (now 120s)")
    const connect = toSinkError(
      Object.assign(
        new Error(
          "@smithy/node-http-handler - the request socket did not establish a connection with the server within the configured timeout of 10000 ms."
        ),
        { name: "TimeoutError" }
      ),
      aws
    )
    expect(connect.retryable).toBe(true)
    expect(connect.message).not.toContain("request_timeout")
  })

  it("maps credential-provider failures to InvalidCredentials with a hint about the chain", () => {
    const cause = Object.assign(new Error("Could not load credentials from any providers"), {
      name: "CredentialsProviderError"
    })
    const error = toSinkError(cause, aws)
    expect(error.reason).toBe("InvalidCredentials")
    expect(error.retryable).toBe(false)
    expect(error.hint).toContain("Rivet could not load credentials from the AWS default credential chain")
  })

  it("leaves anything else Unknown and non-retryable", () => {
    const error = toSinkError(new Error("something odd"), { ...aws, key: undefined, operation: "ListObjectsV2" })
    expect(error).toMatchObject({ reason: "Unknown", retryable: false, operation: "ListObjectsV2" })
    expect(error.message).toBe("S3 ListObjectsV2 s3://my-data-bucket/ failed: something odd (Error)")
  })
})
