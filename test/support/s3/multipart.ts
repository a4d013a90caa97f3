import { createHash, randomBytes } from "node:crypto"
import { createReadStream } from "node:fs"
import { mkdir, readFile, rename, rm } from "node:fs/promises"
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from "node:http"
import { join } from "node:path"
import { Readable } from "node:stream"
import { stageBody } from "./body.js"
import type { Target } from "./operation.js"
import { upstreamHeaders, type Upstream } from "./upstream.js"
import { S3Failure, s3Error, sendXml, xmlElements, xmlValues } from "./xml.js"

const MIN_PART_SIZE = 5 * 1024 * 1024
const MAX_PART_NUMBER = 10_000

interface Part {
  readonly path: string
  readonly size: number
  readonly md5: Buffer
  readonly lastModified: Date
}

interface Upload {
  readonly id: string
  readonly bucket: string
  readonly key: string
  readonly initiated: Date
  readonly headers: OutgoingHttpHeaders
  readonly dir: string
  readonly parts: Map<number, Part>
  completing: boolean
}

/** A request the store handles: the parsed target plus the raw exchange. */
export interface Exchange {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly target: Target & { readonly bucket: string }
}

/**
 * Multipart uploads, done in the front end because s3rver lacks Abort/ListMultipartUploads and AWS ETags:
 * parts are staged as files under `dir`; Complete streams them, in order, into one PutObject to s3rver.
 */
export class MultipartStore {
  private readonly uploads = new Map<string, Upload>()
  /** `bucket/key` → ETags of objects assembled here: s3rver's plain md5 and the AWS multipart form. */
  private readonly assembled = new Map<string, { readonly plain: string; readonly multipart: string }>()

  constructor(
    private readonly dir: string,
    private readonly upstream: Upstream,
    private readonly pageSize = 1000
  ) {}

  /** In-progress uploads of a bucket, sorted by key then initiation time. */
  list(bucket: string, prefix = ""): Array<{ key: string; uploadId: string; initiated: Date }> {
    return Array.from(this.uploads.values())
      .filter((u) => u.bucket === bucket && u.key.startsWith(prefix))
      .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.initiated.getTime() - b.initiated.getTime()))
      .map((u) => ({ key: u.key, uploadId: u.id, initiated: u.initiated }))
  }

  /** The multipart ETag to show instead of s3rver's plain md5 one, if this object was assembled here. */
  etagFor(bucket: string, key: string, plainEtag: string | undefined): string | undefined {
    const known = this.assembled.get(`${bucket}/${key}`)
    return known !== undefined && known.plain === plainEtag ? known.multipart : plainEtag
  }

  async create({ req, res, target }: Exchange): Promise<void> {
    await this.requireBucket(target.bucket)
    req.resume()
    const id = randomBytes(16).toString("hex")
    const dir = join(this.dir, id)
    await mkdir(dir)
    const { key } = requireKey(target)
    this.uploads.set(id, { id, bucket: target.bucket, key, initiated: new Date(), headers: upstreamHeaders(req), dir, parts: new Map(), completing: false })
    sendXml(res, 200, "InitiateMultipartUploadResult", xmlElements([["Bucket", target.bucket], ["Key", key], ["UploadId", id]]))
  }

  async uploadPart({ req, res, target }: Exchange): Promise<void> {
    const partNumber = Number(target.query.get("partNumber"))
    if (!Number.isInteger(partNumber) || partNumber < 1 || partNumber > MAX_PART_NUMBER) {
      throw s3Error("InvalidArgument", `Part number must be an integer between 1 and ${MAX_PART_NUMBER}, inclusive`, { ArgumentName: "partNumber" })
    }
    const upload = await this.requireUpload(target)
    const staged = await stageBody(req, join(upload.dir, `part-${partNumber}.${randomBytes(4).toString("hex")}.tmp`))
    if (this.uploads.get(upload.id) !== upload) {
      await rm(staged.path, { force: true })
      throw noSuchUpload()
    }
    const path = join(upload.dir, `part-${partNumber}`)
    await rename(staged.path, path)
    upload.parts.set(partNumber, { path, size: staged.size, md5: staged.md5, lastModified: new Date() })
    res.writeHead(200, { etag: quoted(staged.md5.toString("hex")), "content-length": 0 })
    res.end()
  }

  async complete({ req, res, target }: Exchange): Promise<void> {
    const upload = await this.requireUpload(target)
    const staged = await stageBody(req, join(this.dir, `complete-${randomBytes(6).toString("hex")}.xml`))
    const xml = await readFile(staged.path, "utf8").finally(() => rm(staged.path, { force: true }))
    const parts = this.requestedParts(upload, xml)
    if (upload.completing) throw new S3Failure(409, "OperationAborted", "A conflicting operation is currently in progress against this upload. Please try again.")
    upload.completing = true
    try {
      const body = Readable.from(concatenate(parts.map((p) => p.path)))
      const size = parts.reduce((total, p) => total + p.size, 0)
      const stored = await this.upstream.fetch("PUT", `/${encodeURIComponent(upload.bucket)}/${encodeKey(upload.key)}`, { ...upload.headers, "content-length": size }, body)
      if (stored.status !== 200) throw new S3Failure(stored.status, xmlValues(stored.body.toString("utf8"), "Code")[0] ?? "InternalError", "s3rver rejected the assembled object")
      const multipart = quoted(`${createHash("md5").update(Buffer.concat(parts.map((p) => p.md5))).digest("hex")}-${parts.length}`)
      const plain = stored.headers.etag
      if (typeof plain === "string") this.assembled.set(`${upload.bucket}/${upload.key}`, { plain, multipart })
      this.uploads.delete(upload.id)
      await rm(upload.dir, { recursive: true, force: true })
      const location = `http://${req.headers.host ?? "127.0.0.1"}/${encodeURIComponent(upload.bucket)}/${encodeKey(upload.key)}`
      sendXml(res, 200, "CompleteMultipartUploadResult", xmlElements([["Location", location], ["Bucket", upload.bucket], ["Key", upload.key], ["ETag", multipart]]))
    } finally {
      upload.completing = false
    }
  }

  async abort({ req, res, target }: Exchange): Promise<void> {
    const upload = await this.requireUpload(target)
    req.resume()
    if (upload.completing) throw new S3Failure(409, "OperationAborted", "The upload is being completed.")
    this.uploads.delete(upload.id)
    await rm(upload.dir, { recursive: true, force: true })
    res.writeHead(204)
    res.end()
  }

  async listUploads({ req, res, target }: Exchange): Promise<void> {
    await this.requireBucket(target.bucket)
    req.resume()
    const prefix = target.query.get("prefix") ?? ""
    const keyMarker = target.query.get("key-marker") ?? ""
    const uploadIdMarker = target.query.get("upload-id-marker") ?? ""
    const maxUploads = Math.min(this.pageSize, Number(target.query.get("max-uploads") ?? 1000))
    const all = this.list(target.bucket, prefix)
    // As S3: after key-marker alone, the keys that sort after it; with upload-id-marker, that key's later uploads too.
    const markerAt = all.findIndex((u) => u.key === keyMarker && u.uploadId === uploadIdMarker)
    const start =
      keyMarker === "" ? 0 : uploadIdMarker !== "" && markerAt >= 0 ? markerAt + 1 : all.findIndex((u) => u.key > keyMarker)
    const page = start < 0 ? [] : all.slice(start, start + maxUploads)
    const truncated = start >= 0 && start + maxUploads < all.length
    const owner = "<ID>s3-test-server</ID><DisplayName>s3-test-server</DisplayName>"
    const uploads = page.map(
      (u) =>
        `<Upload>${xmlElements([["Key", u.key], ["UploadId", u.uploadId]])}<Initiator>${owner}</Initiator><Owner>${owner}</Owner>` +
        `${xmlElements([["StorageClass", "STANDARD"], ["Initiated", u.initiated.toISOString()]])}</Upload>`
    )
    const last = page.at(-1)
    const head = xmlElements([
      ["Bucket", target.bucket],
      ["KeyMarker", keyMarker],
      ["UploadIdMarker", uploadIdMarker],
      ...(truncated && last !== undefined ? ([["NextKeyMarker", last.key], ["NextUploadIdMarker", last.uploadId]] as const) : []),
      ["Prefix", prefix],
      ["MaxUploads", maxUploads],
      ["IsTruncated", String(truncated)]
    ])
    sendXml(res, 200, "ListMultipartUploadsResult", head + uploads.join(""))
  }

  async listParts({ req, res, target }: Exchange): Promise<void> {
    const upload = await this.requireUpload(target)
    req.resume()
    const parts = Array.from(upload.parts.entries())
      .sort(([a], [b]) => a - b)
      .map(([n, p]) => `<Part>${xmlElements([["PartNumber", n], ["LastModified", p.lastModified.toISOString()], ["ETag", quoted(p.md5.toString("hex"))], ["Size", p.size]])}</Part>`)
    const head = xmlElements([["Bucket", upload.bucket], ["Key", upload.key], ["UploadId", upload.id], ["StorageClass", "STANDARD"], ["PartNumberMarker", 0], ["MaxParts", 1000], ["IsTruncated", "false"]])
    sendXml(res, 200, "ListPartsResult", head + parts.join(""))
  }

  /** Removes every staged part (the directory itself belongs to the server). */
  async clear(): Promise<void> {
    const dirs = Array.from(this.uploads.values(), (u) => u.dir)
    this.uploads.clear()
    await Promise.all(dirs.map((dir) => rm(dir, { recursive: true, force: true })))
  }

  private requestedParts(upload: Upload, xml: string): Array<Part> {
    const requested = xmlValues(xml, "Part").map((part) => ({
      number: Number(xmlValues(part, "PartNumber")[0]),
      etag: (xmlValues(part, "ETag")[0] ?? "").replace(/"/g, "")
    }))
    if (requested.length === 0) throw s3Error("MalformedXML", "The XML you provided was not well-formed or did not validate against our published schema.")
    return requested.map(({ number, etag }, index) => {
      if (index > 0 && !(number > (requested[index - 1]?.number ?? 0))) {
        throw s3Error("InvalidPartOrder", "The list of parts was not in ascending order. Parts must be ordered by part number.")
      }
      const part = upload.parts.get(number)
      if (part === undefined || part.md5.toString("hex") !== etag) {
        throw s3Error("InvalidPart", "One or more of the specified parts could not be found. The part may not have been uploaded, or the specified entity tag may not match the part's entity tag.", { PartNumber: String(number), ETag: etag })
      }
      if (index < requested.length - 1 && part.size < MIN_PART_SIZE) {
        throw s3Error("EntityTooSmall", "Your proposed upload is smaller than the minimum allowed object size.", { ProposedSize: String(part.size), MinSizeAllowed: String(MIN_PART_SIZE), PartNumber: String(number) })
      }
      return part
    })
  }

  private async requireBucket(bucket: string): Promise<void> {
    if (!(await this.upstream.bucketExists(bucket))) throw s3Error("NoSuchBucket", "The specified bucket does not exist", { BucketName: bucket })
  }

  private async requireUpload(target: Exchange["target"]): Promise<Upload> {
    await this.requireBucket(target.bucket)
    const upload = this.uploads.get(target.query.get("uploadId") ?? "")
    if (upload === undefined || upload.bucket !== target.bucket || upload.key !== target.key) throw noSuchUpload()
    return upload
  }
}

const noSuchUpload = (): S3Failure =>
  s3Error("NoSuchUpload", "The specified upload does not exist. The upload ID may be invalid, or the upload may have been aborted or completed.")

const requireKey = (target: Exchange["target"]): { key: string } => {
  if (target.key === undefined) throw s3Error("InvalidRequest", "This operation needs an object key")
  return { key: target.key }
}

const quoted = (text: string): string => `"${text}"`

/** Encodes a key for a path, keeping its slashes. */
export const encodeKey = (key: string): string => key.split("/").map(encodeURIComponent).join("/")

async function* concatenate(paths: ReadonlyArray<string>): AsyncGenerator<Buffer> {
  for (const path of paths) {
    for await (const chunk of createReadStream(path)) yield chunk as Buffer
  }
}
