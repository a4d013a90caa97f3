import { createHash, type Hash } from "node:crypto"
import { createWriteStream } from "node:fs"
import { rm } from "node:fs/promises"
import type { IncomingMessage } from "node:http"
import { Transform, type TransformCallback } from "node:stream"
import { pipeline } from "node:stream/promises"
import { crc32 } from "node:zlib"
import { AwsChunkedDecoder } from "./chunked.js"
import { s3Error, S3Failure } from "./xml.js"

/** A request body decoded and verified, staged in a file the caller owns (and must remove). */
export interface StagedBody {
  readonly path: string
  readonly size: number
  readonly md5: Buffer
  /** The x-amz-checksum-* values the body was checked against (algorithm → base64), which S3 echoes on success. */
  readonly checksums: ReadonlyMap<string, string>
}

/** True when the request body uses the aws-chunked framing. */
export const isAwsChunked = (req: IncomingMessage): boolean =>
  contentEncodings(req).includes("aws-chunked") || (headerText(req, "x-amz-content-sha256") ?? "").startsWith("STREAMING-")

/** A request header as one string (repeated headers joined with ","). */
export const headerText = (req: IncomingMessage, name: string): string | undefined => {
  const value = req.headers[name]
  return Array.isArray(value) ? value.join(",") : value
}

/** `content-encoding` tokens, lower-case, in order. */
export const contentEncodings = (req: IncomingMessage): Array<string> =>
  (headerText(req, "content-encoding") ?? "")
    .split(",")
    .map((token) => token.trim().toLowerCase())
    .filter((token) => token.length > 0)

/**
 * Streams the request body into `path`, removing aws-chunked framing, and checks it like S3 does:
 * x-amz-decoded-content-length, a hex x-amz-content-sha256, Content-MD5 and x-amz-checksum-{crc32,sha1,sha256}
 * (as headers or aws-chunked trailers; crc32c/crc64nvme are accepted unchecked). Throws S3Failure.
 */
export const stageBody = async (req: IncomingMessage, path: string): Promise<StagedBody> => {
  const payloadHash = headerText(req, "x-amz-content-sha256") ?? "UNSIGNED-PAYLOAD"
  const decoder = isAwsChunked(req) ? new AwsChunkedDecoder() : undefined
  const expected = new Map<string, string>()
  for (const algorithm of CHECKED) {
    const value = headerText(req, `x-amz-checksum-${algorithm}`)
    if (value !== undefined) expected.set(algorithm, value)
  }
  const digests = new Digests(/^[0-9a-f]{64}$/.test(payloadHash) || expected.has("sha256"), expected.has("sha1"))
  try {
    // req is piped rather than put in the pipeline: a framing error must not destroy it (and the
    // socket with it), so the caller can drain the body and answer with the S3 error.
    const first = decoder ?? digests
    const done = pipeline(decoder === undefined ? [digests, createWriteStream(path)] : [decoder, digests, createWriteStream(path)])
    const onAbort = (error: Error) => first.destroy(error)
    req.once("error", onAbort).pipe(first)
    await done.finally(() => req.off("error", onAbort).unpipe(first))
    for (const [name, value] of decoder?.trailers ?? []) {
      const algorithm = name.replace(/^x-amz-checksum-/, "")
      if (name !== algorithm && CHECKED.includes(algorithm)) expected.set(algorithm, value)
    }
    verify(req, payloadHash, digests, expected)
    return { path, size: digests.size, md5: digests.md5.digest(), checksums: expected }
  } catch (error) {
    await rm(path, { force: true })
    throw error
  }
}

const CHECKED: ReadonlyArray<string> = ["crc32", "sha1", "sha256"]

const verify = (req: IncomingMessage, payloadHash: string, digests: Digests, expected: ReadonlyMap<string, string>): void => {
  const declared = headerText(req, "x-amz-decoded-content-length")
  if (declared !== undefined && Number(declared) !== digests.size) {
    throw s3Error("IncompleteBody", `You did not provide the number of bytes specified by x-amz-decoded-content-length (${declared}, got ${digests.size}).`)
  }
  const sha256 = digests.sha256?.digest()
  if (/^[0-9a-f]{64}$/.test(payloadHash) && sha256?.toString("hex") !== payloadHash) {
    throw s3Error("XAmzContentSHA256Mismatch", "The provided 'x-amz-content-sha256' header does not match what was computed.")
  }
  const contentMd5 = headerText(req, "content-md5")
  if (contentMd5 !== undefined && contentMd5 !== digests.md5.copy().digest("base64")) {
    throw s3Error("BadDigest", "The Content-MD5 you specified did not match what we received.")
  }
  const actual: Record<string, string | undefined> = {
    crc32: uint32Base64(digests.crc32),
    sha1: digests.sha1?.digest("base64"),
    sha256: sha256?.toString("base64")
  }
  for (const [algorithm, value] of expected) {
    if (actual[algorithm] !== value) {
      throw new S3Failure(400, "BadDigest", `The ${algorithm.toUpperCase()} you specified did not match the calculated checksum.`)
    }
  }
}

const uint32Base64 = (value: number): string => {
  const bytes = Buffer.alloc(4)
  bytes.writeUInt32BE(value >>> 0)
  return bytes.toString("base64")
}

/** Pass-through that counts bytes and feeds the digests S3 may need to check. */
class Digests extends Transform {
  size = 0
  crc32 = 0
  readonly md5: Hash = createHash("md5")
  readonly sha256: Hash | undefined
  readonly sha1: Hash | undefined

  constructor(withSha256: boolean, withSha1: boolean) {
    super()
    this.sha256 = withSha256 ? createHash("sha256") : undefined
    this.sha1 = withSha1 ? createHash("sha1") : undefined
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    this.size += chunk.length
    this.crc32 = crc32(chunk, this.crc32)
    this.md5.update(chunk)
    this.sha256?.update(chunk)
    this.sha1?.update(chunk)
    callback(null, chunk)
  }
}
