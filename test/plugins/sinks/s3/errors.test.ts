import { expect, layer } from "@effect/vitest"
import * as Effect from "effect/Effect"
import type { SinkError, SinkErrorReason } from "../../../../src/core/errors.js"
import { S3Server } from "../../../support/s3/layer.js"
import type { FaultRule, S3TestServer } from "../../../support/s3/server.js"
import { keyEnv, MiB, randomBlock, sha256, testDriver } from "./harness.js"

const BUCKET = "rivet-s3-errors"

/** The file's server, with the faults a test sets cleared when the test ends. */
const serverForTest = Effect.tap(S3Server, (server) => Effect.addFinalizer(() => Effect.sync(() => server.faults.clear())))

const driver = (server: S3TestServer) => testDriver(server, BUCKET, { extra: { prefix: "errs" } })
const WRONG_SECRET = "not-the-secret-at-all-0123456789abcdefgh"

const expectNoSecrets = (server: S3TestServer, error: SinkError) => {
  const text = JSON.stringify(error) + String(error.message) + String(error.hint)
  expect(text).not.toContain(server.credentials.secretAccessKey)
  expect(text).not.toContain(WRONG_SECRET)
}

layer(S3Server.layer({ buckets: [BUCKET] }))("S3 error mapping against an S3-protocol server", (it) => {
  it.scoped("a wrong secret is SignatureDoesNotMatch, non-retryable, with the region hint", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      const s3 = yield* testDriver(server, BUCKET, { env: keyEnv(server, WRONG_SECRET) })
      const error = yield* Effect.flip(s3.put("x.csv", randomBlock(10), "text/csv"))
      expect(error.reason).toBe("InvalidCredentials")
      expect(error.retryable).toBe(false)
      expect(error.operation).toBe("PutObject")
      expect(error.message).toMatch(/^S3 PutObject s3:\/\/rivet-s3-errors\/x\.csv failed: .*SignatureDoesNotMatch/)
      expect(error.hint).toContain("Ensure region is set (even for MinIO, e.g. us-east-1)")
      expectNoSecrets(server, error)
      const checked = yield* Effect.flip(s3.check)
      expect(checked.reason).toBe("InvalidCredentials")
      expect(checked.message).toContain("SignatureDoesNotMatch")
      expectNoSecrets(server, checked)
    })
  )

  it.scoped("an unknown access key is InvalidAccessKeyId with the key-variables hint", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      const s3 = yield* testDriver(server, BUCKET, {
        env: { RIVET_TEST_S3_AK: "AKIAUNKNOWNKEY000000", RIVET_TEST_S3_SK: WRONG_SECRET }
      })
      const error = yield* Effect.flip(s3.put("x.csv", randomBlock(10), "text/csv"))
      expect(error.reason).toBe("InvalidCredentials")
      expect(error.retryable).toBe(false)
      expect(error.message).toContain("InvalidAccessKeyId")
      expect(error.hint).toBe(
        "The access key id from the environment variables RIVET_TEST_S3_AK/RIVET_TEST_S3_SK (access_key_env/secret_key_env) is not known to this endpoint: check it (a temporary ASIA… key also needs its session token)."
      )
      expectNoSecrets(server, error)
    })
  )

  it.scoped("AccessDenied names the permissions Rivet needs", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      server.faults.add({ operation: "PutObject", respond: { s3Error: "AccessDenied" } })
      const s3 = yield* driver(server)
      const error = yield* Effect.flip(s3.put("denied.csv", randomBlock(10), "text/csv"))
      expect(error.reason).toBe("PermissionDenied")
      expect(error.retryable).toBe(false)
      expect(error.key).toBe("errs/denied.csv")
      expect(error.hint).toBe("Check IAM policy. Rivet needs s3:PutObject and s3:GetBucketLocation.")
      const checked = yield* Effect.flip(s3.check)
      expect(checked.reason).toBe("PermissionDenied")
      expect(checked.operation).toBe("PutObject")
    })
  )

  it.scoped("a 503 on a part is retryable, and retrying the block succeeds", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      server.faults.add({ operation: "UploadPart", respond: { status: 503 }, times: 1 })
      const s3 = yield* driver(server)
      const injectedBefore = server.faults.injected()
      const block = randomBlock(5 * MiB)
      const upload = yield* s3.begin("flaky.parquet", "application/vnd.apache.parquet")
      const error = yield* Effect.flip(upload.writeBlock(0, block))
      expect(error.retryable).toBe(true)
      expect(error.reason).toBe("RateLimited")
      expect(error.message).toContain("S3 UploadPart s3://rivet-s3-errors/errs/flaky.parquet failed")
      expect(server.faults.injected()).toBe(injectedBefore + 1)
      yield* upload.writeBlock(0, block)
      yield* upload.complete(1)
      const bytes = yield* Effect.promise(() => server.getObject(BUCKET, "errs/flaky.parquet"))
      expect(sha256(bytes)).toBe(sha256(block))
    })
  )

  const transient: ReadonlyArray<{ readonly respond: FaultRule["respond"]; readonly reason: SinkErrorReason }> = [
    { respond: { status: 500 }, reason: "Unavailable" },
    { respond: { s3Error: "InternalError" }, reason: "Unavailable" },
    { respond: { s3Error: "SlowDown" }, reason: "RateLimited" },
    { respond: { reset: true }, reason: "Unavailable" }
  ]

  it.scoped.each(transient)("$respond is retryable ($reason)", ({ reason, respond }) =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      server.faults.add({ operation: "PutObject", respond, times: 1 })
      const s3 = yield* driver(server)
      const error = yield* Effect.flip(s3.put("transient.csv", randomBlock(10), "text/csv"))
      expect(error.reason).toBe(reason)
      expect(error.retryable).toBe(true)
      yield* s3.put("transient.csv", randomBlock(10), "text/csv")
    })
  )

  it.scoped("a stalled request fails as retryable instead of hanging", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      server.faults.add({ operation: "UploadPart", respond: { stallMs: 30_000 }, times: 1 })
      const s3 = yield* testDriver(server, BUCKET, { extra: { prefix: "errs" }, driver: { timeouts: { idleMs: 300 } } })
      const upload = yield* s3.begin("stalled.csv", "text/csv")
      const error = yield* Effect.flip(upload.writeBlock(0, randomBlock(1024)))
      expect(error.retryable).toBe(true)
      expect(error.reason).toBe("Unavailable")
      expect(error.message).toMatch(/failed: no bytes sent or received for 300ms, the destination's request_timeout \(TimeoutError\)$/)
      expect(error.hint).toContain("raise request_timeout on the destination (now 300ms)")
      yield* upload.abort
    })
  )

  it.scoped("a missing bucket is NotFound with the create-it hint, from put, begin and check", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      const s3 = yield* testDriver(server, "rivet-s3-no-such-bucket")
      const hint = "The bucket must already exist. Create it first: aws s3 mb s3://rivet-s3-no-such-bucket"
      const put = yield* Effect.flip(s3.put("x.csv", randomBlock(10), "text/csv"))
      expect(put.reason).toBe("NotFound")
      expect(put.retryable).toBe(false)
      expect(put.message).toContain("NoSuchBucket")
      expect(put.hint).toBe(hint)
      const begin = yield* Effect.flip(s3.begin("x.csv", "text/csv"))
      expect(begin.hint).toBe(hint)
      const checked = yield* Effect.flip(s3.check)
      expect(checked.reason).toBe("NotFound")
      expect(checked.operation).toBe("GetBucketLocation")
      expect(checked.hint).toBe(hint)
    })
  )

  it.scoped("an injected NoSuchBucket maps the same way", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      server.faults.add({ operation: "CreateMultipartUpload", respond: { s3Error: "NoSuchBucket" } })
      const s3 = yield* driver(server)
      const error = yield* Effect.flip(s3.begin("x.csv", "text/csv"))
      expect(error.reason).toBe("NotFound")
      expect(error.hint).toBe("The bucket must already exist. Create it first: aws s3 mb s3://rivet-s3-errors")
    })
  )

  it.scoped("a lost CompleteMultipartUpload response is recognised on retry", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      const s3 = yield* driver(server)
      const block = randomBlock(2048)
      const upload = yield* s3.begin("lost-complete.csv", "text/csv")
      yield* upload.writeBlock(0, block)
      // The server completes the upload, but the client never sees the answer.
      server.faults.add({ operation: "CompleteMultipartUpload", respond: { reset: true }, times: 1 })
      const first = yield* Effect.flip(upload.complete(1))
      expect(first.retryable).toBe(true)
      yield* upload.complete(1)
      const bytes = yield* Effect.promise(() => server.getObject(BUCKET, "errs/lost-complete.csv"))
      expect(sha256(bytes)).toBe(sha256(block))
    })
  )

  it.scoped("check passes against a healthy bucket", () =>
    Effect.gen(function* () {
      const server = yield* serverForTest
      const s3 = yield* driver(server)
      yield* s3.check
    })
  )
})
