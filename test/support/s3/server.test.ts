import {
  AbortMultipartUploadCommand,
  CompleteMultipartUploadCommand,
  CreateMultipartUploadCommand,
  GetObjectCommand,
  type GetObjectCommandOutput,
  HeadObjectCommand,
  ListMultipartUploadsCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
  UploadPartCommand,
  type S3ClientConfig
} from "@aws-sdk/client-s3"
import { afterAll, afterEach, beforeAll, describe, expect, it } from "@effect/vitest"
import { NodeHttpHandler } from "@smithy/node-http-handler"
import { createHash, randomBytes } from "node:crypto"
import { Readable } from "node:stream"
import { startS3Server, type S3TestServer } from "./server.js"

const BUCKET = "s3-server-test"
const MiB = 1024 * 1024
let server: S3TestServer

beforeAll(async () => {
  server = await startS3Server({ extraCredentials: [{ accessKeyId: "AKIAOTHERKEY", secretAccessKey: "other-secret" }] })
  await server.createBucket(BUCKET)
})
afterAll(() => server.stop())
afterEach(() => server.faults.clear())

/** A client as Rivet's sink configures it (no optional checksums); `overrides` win. */
const client = (overrides: S3ClientConfig = {}): S3Client =>
  new S3Client({
    endpoint: server.endpoint,
    region: server.region,
    forcePathStyle: true,
    credentials: server.credentials,
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    ...overrides
  })

const sha256 = (bytes: Uint8Array): string => createHash("sha256").update(bytes).digest("hex")
const errorOf = (promise: Promise<unknown>): Promise<{ name: string; status: number | undefined }> =>
  promise.then(
    () => ({ name: "no error", status: undefined }),
    (error: Error & { $metadata?: { httpStatusCode?: number } }) => ({ name: error.name, status: error.$metadata?.httpStatusCode })
  )
const bytesOf = async (got: GetObjectCommandOutput): Promise<Uint8Array> => {
  if (got.Body === undefined) throw new Error("GetObject returned no body")
  return got.Body.transformToByteArray()
}
const statusesOf = (operation: string, path: string): Array<number> =>
  server.requests().filter((r) => r.operation === operation && r.path === path).map((r) => r.status)

describe("S3 test server", () => {
  it("round-trips put / get / head / list through the SDK", async () => {
    const s3 = client()
    const body = randomBytes(300_000)
    const key = "round trip/a+b (1).bin"
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: key, Body: body, ContentType: "application/x-test" }))
    const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key }))
    expect(sha256(await bytesOf(got))).toBe(sha256(body))
    expect(got.ContentType).toBe("application/x-test")
    expect((await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))).ContentLength).toBe(body.length)
    const listed = await s3.send(new ListObjectsV2Command({ Bucket: BUCKET, Prefix: "round trip/" }))
    expect(listed.Contents?.map((o) => [o.Key, o.Size])).toEqual([[key, body.length]])
    expect(await server.listObjects(BUCKET, "round trip/")).toEqual([{ key, size: body.length }])
    expect(sha256(await server.getObject(BUCKET, key))).toBe(sha256(body))
    expect(statusesOf("PutObject", `/${BUCKET}/round%20trip/a%2Bb%20%281%29.bin`)).toEqual([200])
  })

  it("decodes aws-chunked bodies and checks their checksum trailer (default SDK checksum settings)", async () => {
    const s3 = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials })
    const seen: Array<Record<string, string>> = []
    s3.middlewareStack.add(
      (next) => (args) => {
        seen.push({ ...(args.request as { headers: Record<string, string> }).headers })
        return next(args)
      },
      { step: "deserialize" }
    )
    const body = randomBytes(200_000)
    await s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "chunked/stream.bin", Body: Readable.from([body.subarray(0, 70_000), body.subarray(70_000)]), ContentLength: body.length }))
    expect(seen[0]?.["content-encoding"]).toContain("aws-chunked")
    expect(seen[0]?.["x-amz-trailer"]).toBe("x-amz-checksum-crc32")
    expect(sha256(await server.getObject(BUCKET, "chunked/stream.bin"))).toBe(sha256(body))
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: "chunked/stream.bin" }))
    expect(head.ContentLength).toBe(body.length)
    expect(head.ContentEncoding).toBeUndefined()
  })

  it("answers broken aws-chunked framing with an S3 error instead of storing it", async () => {
    const s3 = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials, maxAttempts: 1 })
    s3.middlewareStack.add(
      (next) => (args) => {
        const request = args.request as { body: unknown; headers: Record<string, string> }
        request.body = Readable.from([Buffer.from("zz\r\nabc\r\n0\r\n\r\n")])
        delete request.headers["content-length"]
        return next(args)
      },
      { step: "deserialize" }
    )
    const put = s3.send(new PutObjectCommand({ Bucket: BUCKET, Key: "chunked/broken.bin", Body: Readable.from([Buffer.from("abc")]), ContentLength: 3 }))
    expect(await errorOf(put)).toEqual({ name: "InvalidChunkSizeError", status: 400 })
    expect(await server.listObjects(BUCKET, "chunked/broken")).toEqual([])
  })

  it("rejects a body whose declared checksum is wrong (BadDigest), storing nothing", async () => {
    const put = client().send(new PutObjectCommand({ Bucket: BUCKET, Key: "bad-digest.bin", Body: Buffer.from("hello"), ChecksumCRC32: "AAAAAA==" }))
    expect(await errorOf(put)).toEqual({ name: "BadDigest", status: 400 })
    expect(await server.listObjects(BUCKET, "bad-digest")).toEqual([])
  })

  it("verifies signatures: wrong secret, unknown key, unsigned request; extra key pairs are accepted", async () => {
    const put = (credentials: { accessKeyId: string; secretAccessKey: string }) =>
      client({ credentials, maxAttempts: 1 }).send(new PutObjectCommand({ Bucket: BUCKET, Key: "auth.txt", Body: "x" }))
    expect(await errorOf(put({ ...server.credentials, secretAccessKey: "not-the-secret" }))).toEqual({ name: "SignatureDoesNotMatch", status: 403 })
    expect(await errorOf(put({ accessKeyId: "AKIAUNKNOWN", secretAccessKey: "whatever" }))).toEqual({ name: "InvalidAccessKeyId", status: 403 })
    const anonymous = await fetch(`${server.endpoint}/${BUCKET}/auth.txt`)
    expect([anonymous.status, await anonymous.text()]).toEqual([403, expect.stringContaining("<Code>AccessDenied</Code>")])
    expect(await server.listObjects(BUCKET, "auth.txt")).toEqual([])
    expect(await errorOf(put({ accessKeyId: "AKIAOTHERKEY", secretAccessKey: "other-secret" }))).toEqual({ name: "no error", status: undefined })
  })

  it("assembles a 3-part multipart upload in part order, with the AWS multipart ETag", async () => {
    const s3 = new S3Client({ endpoint: server.endpoint, region: server.region, forcePathStyle: true, credentials: server.credentials })
    const key = "multipart/three.bin"
    const parts = [randomBytes(5 * MiB), randomBytes(5 * MiB), randomBytes(MiB + 17)]
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key, ContentType: "application/x-parquet" }))
    const uploaded = await Promise.all(
      parts.map(async (body, i) => ({ PartNumber: i + 1, ETag: (await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber: i + 1, Body: body }))).ETag }))
    )
    expect(uploaded.map((p) => p.ETag)).toEqual(parts.map((p) => `"${createHash("md5").update(p).digest("hex")}"`))
    expect(await server.listMultipartUploads(BUCKET)).toEqual([{ key, uploadId: UploadId }])
    const done = await s3.send(
      new CompleteMultipartUploadCommand({
        Bucket: BUCKET,
        Key: key,
        UploadId,
        MultipartUpload: { Parts: uploaded }
      })
    )
    const md5s = Buffer.concat(parts.map((p) => createHash("md5").update(p).digest()))
    expect(done.ETag).toBe(`"${createHash("md5").update(md5s).digest("hex")}-3"`)
    expect(sha256(await server.getObject(BUCKET, key))).toBe(sha256(Buffer.concat(parts)))
    const head = await s3.send(new HeadObjectCommand({ Bucket: BUCKET, Key: key }))
    expect([head.ContentLength, head.ETag, head.ContentType]).toEqual([11 * MiB + 17, done.ETag, "application/x-parquet"])
    expect(await server.listMultipartUploads(BUCKET)).toEqual([])
    expect(server.requests().filter((r) => r.path === `/${BUCKET}/multipart/three.bin`).map((r) => r.operation)).toEqual([
      "CreateMultipartUpload",
      "UploadPart",
      "UploadPart",
      "UploadPart",
      "CompleteMultipartUpload",
      "HeadObject"
    ])
  })

  it("lists in-progress uploads and aborts them (staged parts gone, id unknown afterwards)", async () => {
    const s3 = client()
    const key = "multipart/aborted.bin"
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }))
    await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber: 1, Body: randomBytes(1024) }))
    const listed = await s3.send(new ListMultipartUploadsCommand({ Bucket: BUCKET, Prefix: "multipart/" }))
    expect(listed.Uploads?.map((u) => [u.Key, u.UploadId])).toEqual([[key, UploadId]])
    await s3.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId }))
    expect((await s3.send(new ListMultipartUploadsCommand({ Bucket: BUCKET }))).Uploads ?? []).toEqual([])
    expect(await errorOf(s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber: 2, Body: "x" })))).toEqual({ name: "NoSuchUpload", status: 404 })
    expect(await errorOf(s3.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId })))).toEqual({ name: "NoSuchUpload", status: 404 })
    expect(await server.listObjects(BUCKET, key)).toEqual([])
  })

  it("validates Complete like S3 (too-small part, wrong ETag) and reports missing buckets", async () => {
    const s3 = client()
    const key = "multipart/invalid.bin"
    const { UploadId } = await s3.send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }))
    const etags = await Promise.all([1, 2].map(async (n) => (await s3.send(new UploadPartCommand({ Bucket: BUCKET, Key: key, UploadId, PartNumber: n, Body: "tiny" }))).ETag))
    const complete = (parts: Array<{ PartNumber: number; ETag: string | undefined }>) =>
      errorOf(s3.send(new CompleteMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId, MultipartUpload: { Parts: parts } })))
    expect(await complete([{ PartNumber: 1, ETag: etags[0] }, { PartNumber: 2, ETag: etags[1] }])).toEqual({ name: "EntityTooSmall", status: 400 })
    expect(await complete([{ PartNumber: 1, ETag: "\"0123\"" }])).toEqual({ name: "InvalidPart", status: 400 })
    await s3.send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId }))
    expect(await errorOf(s3.send(new CreateMultipartUploadCommand({ Bucket: "s3-server-test-missing", Key: key })))).toEqual({ name: "NoSuchBucket", status: 404 })
    expect(await errorOf(s3.send(new PutObjectCommand({ Bucket: "s3-server-test-missing", Key: key, Body: "x" })))).toEqual({ name: "NoSuchBucket", status: 404 })
  })

  it("injects a 503 once; the SDK's retry then succeeds", async () => {
    server.faults.add({ operation: "PutObject", keyPattern: /^faults\/503/, respond: { status: 503 }, times: 1 })
    const before = server.faults.injected()
    await client({ maxAttempts: 3 }).send(new PutObjectCommand({ Bucket: BUCKET, Key: "faults/503.txt", Body: "retried" }))
    expect(server.faults.injected() - before).toBe(1)
    expect(statusesOf("PutObject", `/${BUCKET}/faults/503.txt`)).toEqual([503, 200])
    expect(Buffer.from(await server.getObject(BUCKET, "faults/503.txt")).toString()).toBe("retried")
  })

  it("injects connection resets (fatal without retries, recovered with one)", async () => {
    await client().send(new PutObjectCommand({ Bucket: BUCKET, Key: "faults/reset.txt", Body: "data" }))
    server.faults.add({ operation: "GetObject", keyPattern: /reset/, respond: { reset: true }, times: 2 })
    const failure = await errorOf(client({ maxAttempts: 1 }).send(new GetObjectCommand({ Bucket: BUCKET, Key: "faults/reset.txt" })))
    expect(failure.status).toBeUndefined()
    expect(failure.name).not.toBe("no error")
    const got = await client({ maxAttempts: 2 }).send(new GetObjectCommand({ Bucket: BUCKET, Key: "faults/reset.txt" }))
    expect(Buffer.from(await bytesOf(got)).toString()).toBe("data")
    expect(statusesOf("GetObject", `/${BUCKET}/faults/reset.txt`)).toEqual([0, 0, 200])
  })

  it("injects S3 error codes such as AccessDenied", async () => {
    server.faults.add({ operation: "PutObject", keyPattern: /denied/, respond: { s3Error: "AccessDenied" } })
    expect(await errorOf(client().send(new PutObjectCommand({ Bucket: BUCKET, Key: "faults/denied.txt", Body: "x" })))).toEqual({ name: "AccessDenied", status: 403 })
    expect(await server.listObjects(BUCKET, "faults/denied")).toEqual([])
  })

  it("stalls requests long enough for client timeouts to fire (request timeout, socket idle timeout)", async () => {
    server.faults.add({ operation: "ListObjectsV2", respond: { stallMs: 5_000 } })
    const list = (requestHandler: NodeHttpHandler) => errorOf(client({ maxAttempts: 1, requestHandler }).send(new ListObjectsV2Command({ Bucket: BUCKET })))
    // Without throwOnRequestTimeout, @smithy/node-http-handler only logs a warning when requestTimeout passes.
    expect((await list(new NodeHttpHandler({ requestTimeout: 250, throwOnRequestTimeout: true }))).name).toBe("TimeoutError")
    expect((await list(new NodeHttpHandler({ socketTimeout: 250 }))).name).toBe("TimeoutError")
    expect(server.faults.injected()).toBeGreaterThanOrEqual(2)
  })

  it("loses a response after the work is done: the upload exists, though the client saw a reset", async () => {
    const key = "faults/lost-create.bin"
    server.faults.add({ operation: "CreateMultipartUpload", keyPattern: /lost-create/, respond: { resetAfterWork: true }, times: 1 })
    const failure = await errorOf(client({ maxAttempts: 1 }).send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key })))
    expect(failure.status).toBeUndefined()
    expect(failure.name).not.toBe("no error")
    const open = (await server.listMultipartUploads(BUCKET)).filter((upload) => upload.key === key)
    expect(open).toHaveLength(1)
    expect(server.requests().filter((r) => r.path === `/${BUCKET}/${key}`).map((r) => [r.fault, r.status])).toEqual([["reset-after-work", 0]])
    await client().send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId: open[0]!.uploadId }))
  })

  it("delays a response after the work is done, and drops it when the client hangs up first", async () => {
    const key = "faults/delayed-create.bin"
    server.faults.add({ operation: "CreateMultipartUpload", keyPattern: /delayed-create/, respond: { delayResponseMs: 60_000 } })
    const abort = new AbortController()
    const pending = errorOf(client({ maxAttempts: 1 }).send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }), { abortSignal: abort.signal }))
    while (!(await server.listMultipartUploads(BUCKET)).some((upload) => upload.key === key)) await new Promise((resolve) => setTimeout(resolve, 10))
    const started = Date.now()
    abort.abort()
    expect((await pending).name).toBe("AbortError")
    expect(Date.now() - started).toBeLessThan(5_000)
    const entry = server.requests().find((r) => r.path === `/${BUCKET}/${key}`)!
    expect([entry.fault, entry.status]).toEqual(["delayed-response", 0])
    // Held, not lost: a client that waits gets it.
    server.faults.clear()
    server.faults.add({ operation: "CreateMultipartUpload", keyPattern: /delayed-create/, respond: { delayResponseMs: 300 } })
    const answered = await client({ maxAttempts: 1 }).send(new CreateMultipartUploadCommand({ Bucket: BUCKET, Key: key }))
    const open = (await server.listMultipartUploads(BUCKET)).filter((upload) => upload.key === key)
    expect(open.map((upload) => upload.uploadId)).toContain(answered.UploadId)
    expect(open).toHaveLength(2)
    for (const upload of open) await client().send(new AbortMultipartUploadCommand({ Bucket: BUCKET, Key: key, UploadId: upload.uploadId }))
  })

  it("refuses a lost-response fault on an operation whose response is streamed from s3rver", () => {
    expect(() => server.faults.add({ operation: "PutObject", respond: { resetAfterWork: true } })).toThrow(/needs operation/)
    expect(() => server.faults.add({ respond: { delayResponseMs: 10 } })).toThrow(/needs operation/)
  })

  it("stop() releases a request stalled far longer than the test, so a failing test never hangs", async () => {
    const own = await startS3Server()
    await own.createBucket(BUCKET)
    own.faults.add({ operation: "ListObjectsV2", respond: { stallMs: 600_000 } })
    const s3 = new S3Client({ endpoint: own.endpoint, region: own.region, forcePathStyle: true, credentials: own.credentials, maxAttempts: 1 })
    const pending = errorOf(s3.send(new ListObjectsV2Command({ Bucket: BUCKET })))
    while (own.requests().length === 0) await new Promise((resolve) => setTimeout(resolve, 10))
    const started = Date.now()
    await own.stop()
    expect((await pending).name).not.toBe("no error")
    expect(Date.now() - started).toBeLessThan(10_000)
    expect(own.faults.injectedByKind()).toEqual({ stall: 1 })
    expect(own.requests()[0]).toMatchObject({ operation: "ListObjectsV2", status: 0, fault: "stall" })
    s3.destroy()
  })
})
