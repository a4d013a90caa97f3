import { GetObjectCommand, HeadObjectCommand, PutObjectCommand, S3Client } from "@aws-sdk/client-s3"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { allows, denial, iamActions } from "./iam.js"
import { classify } from "./operation.js"
import { startS3Server, type S3TestServer } from "./server.js"

const actionsOf = (method: string, url: string, headers: Record<string, string> = {}) => iamActions(classify(method, url, headers), headers)

describe("IAM actions of S3 requests (as AWS authorizes them)", () => {
  it.each([
    ["PUT", "/b/k", {}, ["s3:PutObject"]],
    ["PUT", "/b/k", { "x-amz-tagging": "a=1" }, ["s3:PutObject", "s3:PutObjectTagging"]],
    ["PUT", "/b/k", { "x-amz-acl": "private" }, ["s3:PutObject", "s3:PutObjectAcl"]],
    ["PUT", "/b/k", { "x-amz-copy-source": "/b/src" }, ["s3:PutObject", "s3:GetObject"]],
    ["POST", "/b/k?uploads", {}, ["s3:PutObject"]],
    ["POST", "/b/k?uploads", { "x-amz-tagging": "a=1" }, ["s3:PutObject", "s3:PutObjectTagging"]],
    ["PUT", "/b/k?partNumber=1&uploadId=u", {}, ["s3:PutObject"]],
    ["POST", "/b/k?uploadId=u", {}, ["s3:PutObject"]],
    ["DELETE", "/b/k?uploadId=u", {}, ["s3:AbortMultipartUpload"]],
    ["GET", "/b/k?uploadId=u", {}, ["s3:ListMultipartUploadParts"]],
    ["GET", "/b?uploads", {}, ["s3:ListBucketMultipartUploads"]],
    ["GET", "/b?list-type=2&prefix=p", {}, ["s3:ListBucket"]],
    ["GET", "/b", {}, ["s3:ListBucket"]],
    ["HEAD", "/b", {}, ["s3:ListBucket"]],
    ["GET", "/b?location", {}, ["s3:GetBucketLocation"]],
    ["GET", "/b/k", {}, ["s3:GetObject"]],
    ["HEAD", "/b/k", {}, ["s3:GetObject"]],
    ["GET", "/b/k?versionId=v", {}, ["s3:GetObjectVersion"]],
    ["DELETE", "/b/k", {}, ["s3:DeleteObject"]],
    ["DELETE", "/b/k?versionId=v", {}, ["s3:DeleteObjectVersion"]],
    ["POST", "/b?delete", {}, ["s3:DeleteObject"]],
    ["PUT", "/b", {}, ["s3:CreateBucket"]],
    ["GET", "/", {}, ["s3:ListAllMyBuckets"]]
  ] as const)("%s %s %j needs %j", (method, url, headers, expected) => {
    expect(actionsOf(method, url, headers)).toEqual(expected)
  })

  it("an operation the server does not know is denied to every restricted key", () => {
    const policies = new Map([["K", new Set(["s3:PutObject", "s3:GetObject"])]])
    const target = classify("PATCH", "/b/k", {})
    expect(denial(policies, "K", target, {})?.code).toBe("AccessDenied")
  })

  it("a key without an allow list, or with s3:*, may do everything; others only what they list", () => {
    const policies = new Map([["R", new Set(["s3:PutObject"])], ["ALL", new Set(["s3:*"])]])
    expect(allows(policies, "UNRESTRICTED", "s3:DeleteObject")).toBe(true)
    expect(allows(policies, "ALL", "s3:DeleteObject")).toBe(true)
    expect(allows(policies, "R", "s3:PutObject")).toBe(true)
    expect(allows(policies, "R", "s3:DeleteObject")).toBe(false)
  })

  it("the denial names the first missing action and the resource, as AWS words it", () => {
    const policies = new Map([["K", new Set(["s3:PutObject"])]])
    const failure = denial(policies, "K", classify("PUT", "/b/dir/k.csv", { "x-amz-tagging": "a=1" }), { "x-amz-tagging": "a=1" })
    expect(failure?.status).toBe(403)
    expect(failure?.message).toBe(
      'User: arn:aws:iam::123456789012:user/K is not authorized to perform: s3:PutObjectTagging on resource: "arn:aws:s3:::b/dir/k.csv" because no identity-based policy allows the s3:PutObjectTagging action'
    )
  })
})

describe("allow lists on the S3 test server", () => {
  const BUCKET = "iam-test"
  const restricted = { accessKeyId: "AKIARESTRICTED", secretAccessKey: "restricted-secret", allow: ["s3:PutObject"] }
  let server: S3TestServer
  const client = (credentials: { accessKeyId: string; secretAccessKey: string }) =>
    new S3Client({
      endpoint: server.endpoint,
      region: server.region,
      forcePathStyle: true,
      credentials,
      requestChecksumCalculation: "WHEN_REQUIRED",
      responseChecksumValidation: "WHEN_REQUIRED"
    })
  const failureOf = (promise: Promise<unknown>) =>
    promise.then(
      () => undefined,
      (error: Error & { Code?: string; $metadata?: { httpStatusCode?: number } }) => ({ name: error.name, status: error.$metadata?.httpStatusCode, message: error.message })
    )

  beforeAll(async () => {
    server = await startS3Server({ extraCredentials: [restricted] })
    await server.createBucket(BUCKET)
  })
  afterAll(() => server?.stop())

  it("a restricted key may put but gets a 403 AccessDenied document for a read; the main key may read", async () => {
    await client(restricted).send(new PutObjectCommand({ Bucket: BUCKET, Key: "k", Body: "hello" }))
    const denied = await failureOf(client(restricted).send(new GetObjectCommand({ Bucket: BUCKET, Key: "k" })))
    expect(denied).toMatchObject({ name: "AccessDenied", status: 403 })
    expect(denied?.message).toContain("is not authorized to perform: s3:GetObject")
    const read = await client(server.credentials).send(new GetObjectCommand({ Bucket: BUCKET, Key: "k" }))
    expect(await read.Body?.transformToString()).toBe("hello")
    expect(server.requests().map((r) => `${r.operation} ${r.status}`)).toEqual(["PutObject 200", "GetObject 403", "GetObject 200"])
  })

  it("a missing key is a 403, not a 404, for a key that may read objects but not list the bucket", async () => {
    await server.stop()
    server = await startS3Server({ extraCredentials: [{ ...restricted, allow: ["s3:GetObject"] }] })
    await server.createBucket(BUCKET)
    expect(await failureOf(client(restricted).send(new HeadObjectCommand({ Bucket: BUCKET, Key: "missing" })))).toMatchObject({ status: 403 })
    expect(await failureOf(client(server.credentials).send(new HeadObjectCommand({ Bucket: BUCKET, Key: "missing" })))).toMatchObject({ status: 404 })
  })

  it("a PutObject with x-amz-checksum-sha256 gets it echoed in the response, as S3 does", async () => {
    const put = await client(server.credentials).send(
      new PutObjectCommand({ Bucket: BUCKET, Key: "sum", Body: "hello", ChecksumSHA256: "LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=" })
    )
    expect(put.ChecksumSHA256).toBe("LPJNul+wow4m6DsqxbninhsWHlwfp0JecwQzYpOLmCQ=")
  })
})
