import { parseQuery } from "./sigv4.js"

/** What an incoming request addresses (path-style: `/<bucket>/<key>`), with its S3 operation name. */
export interface Target {
  readonly operation: string
  readonly bucket: string | undefined
  readonly key: string | undefined
  /** Decoded query parameters (last value wins). */
  readonly query: ReadonlyMap<string, string>
  /** Raw path, without the query string. */
  readonly rawPath: string
}

/** Classifies a request by method, path and query into an S3 operation name ("Unknown" if unrecognised). */
export const classify = (method: string, url: string, headers: Readonly<Record<string, unknown>>): Target => {
  const queryAt = url.indexOf("?")
  const rawPath = queryAt < 0 ? url : url.slice(0, queryAt)
  const query = new Map(parseQuery(queryAt < 0 ? "" : url.slice(queryAt + 1)))
  const slash = rawPath.indexOf("/", 1)
  const bucket = rawPath.length > 1 ? decode(slash < 0 ? rawPath.slice(1) : rawPath.slice(1, slash)) : undefined
  const keyText = slash < 0 ? "" : decode(rawPath.slice(slash + 1))
  const key = keyText.length > 0 ? keyText : undefined
  const has = (name: string) => query.has(name)
  const operation =
    bucket === undefined
      ? method === "GET" ? "ListBuckets" : "Unknown"
      : key === undefined
        ? bucketOperation(method, has)
        : objectOperation(method, has, headers["x-amz-copy-source"] !== undefined)
  return { operation, bucket, key, query, rawPath }
}

const bucketOperation = (method: string, has: (name: string) => boolean): string => {
  switch (method) {
    case "PUT":
      return "CreateBucket"
    case "HEAD":
      return "HeadBucket"
    case "DELETE":
      return "DeleteBucket"
    case "POST":
      return has("delete") ? "DeleteObjects" : "Unknown"
    case "GET":
      if (has("location")) return "GetBucketLocation"
      if (has("uploads")) return "ListMultipartUploads"
      return has("list-type") ? "ListObjectsV2" : "ListObjects"
    default:
      return "Unknown"
  }
}

const objectOperation = (method: string, has: (name: string) => boolean, copy: boolean): string => {
  switch (method) {
    case "PUT":
      if (has("uploadId")) return copy ? "UploadPartCopy" : "UploadPart"
      return copy ? "CopyObject" : "PutObject"
    case "POST":
      if (has("uploads")) return "CreateMultipartUpload"
      return has("uploadId") ? "CompleteMultipartUpload" : "Unknown"
    case "DELETE":
      return has("uploadId") ? "AbortMultipartUpload" : "DeleteObject"
    case "GET":
      return has("uploadId") ? "ListParts" : "GetObject"
    case "HEAD":
      return "HeadObject"
    default:
      return "Unknown"
  }
}

const decode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}
