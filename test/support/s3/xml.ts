import { randomBytes } from "node:crypto"
import type { ServerResponse } from "node:http"

/** An S3 protocol error the front end answers with (`<Error><Code>…` body, like real S3). */
export class S3Failure extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly extra: Readonly<Record<string, string>> = {}
  ) {
    super(message)
    this.name = code
  }
}

/** Status codes real S3 uses for the error codes the front end produces. */
export const S3_ERROR_STATUS: Readonly<Record<string, number>> = {
  AccessDenied: 403,
  InvalidAccessKeyId: 403,
  SignatureDoesNotMatch: 403,
  RequestTimeTooSkewed: 403,
  SlowDown: 503,
  InternalError: 500,
  NoSuchBucket: 404,
  NoSuchUpload: 404,
  NoSuchKey: 404,
  PreconditionFailed: 412
}

/** Builds an S3Failure for a well-known code, with its usual status. */
export const s3Error = (code: string, message: string, extra: Record<string, string> = {}): S3Failure =>
  new S3Failure(S3_ERROR_STATUS[code] ?? 400, code, message, extra)

/** Escapes text for an XML element body. */
export const xmlEscape = (text: string): string =>
  text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;").replace(/'/g, "&apos;")

/** Reverses xmlEscape (plus numeric character references). */
export const xmlUnescape = (text: string): string =>
  text.replace(/&(#x[0-9a-fA-F]+|#[0-9]+|amp|lt|gt|quot|apos);/g, (_, entity: string) => {
    if (entity.startsWith("#x")) return String.fromCodePoint(parseInt(entity.slice(2), 16))
    if (entity.startsWith("#")) return String.fromCodePoint(parseInt(entity.slice(1), 10))
    return ({ amp: "&", lt: "<", gt: ">", quot: "\"", apos: "'" } as Record<string, string>)[entity] ?? ""
  })

/** Text of every `<tag>…</tag>` directly found in `xml`, unescaped, in document order. */
export const xmlValues = (xml: string, tag: string): Array<string> =>
  Array.from(xml.matchAll(new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`, "g")), (m) => xmlUnescape(m[1] ?? ""))

/** Serialises `[tag, value]` pairs into XML elements (values escaped). */
export const xmlElements = (fields: ReadonlyArray<readonly [string, string | number]>): string =>
  fields.map(([tag, value]) => `<${tag}>${xmlEscape(String(value))}</${tag}>`).join("")

/** Sends an XML document with S3's namespace on the root element. */
export const sendXml = (res: ServerResponse, status: number, root: string, inner: string, headers: Record<string, string> = {}): void => {
  const body = `<?xml version="1.0" encoding="UTF-8"?>\n<${root} xmlns="http://s3.amazonaws.com/doc/2006-03-01/">${inner}</${root}>`
  res.writeHead(status, {
    ...headers,
    "content-type": "application/xml",
    "content-length": Buffer.byteLength(body),
    "x-amz-request-id": newRequestId()
  })
  res.end(body)
}

/** Sends an S3 error document (no body for HEAD requests, as S3 does). */
export const sendError = (res: ServerResponse, method: string, failure: S3Failure, resource: string): void => {
  const requestId = newRequestId()
  if (method === "HEAD") {
    res.writeHead(failure.status, { "x-amz-request-id": requestId, "content-length": 0 })
    res.end()
    return
  }
  const body =
    `<?xml version="1.0" encoding="UTF-8"?>\n<Error>` +
    xmlElements([["Code", failure.code], ["Message", failure.message], ...Object.entries(failure.extra), ["Resource", resource], ["RequestId", requestId], ["HostId", requestId]]) +
    `</Error>`
  res.writeHead(failure.status, { "content-type": "application/xml", "content-length": Buffer.byteLength(body), "x-amz-request-id": requestId })
  res.end(body)
}

const newRequestId = (): string => randomBytes(8).toString("hex").toUpperCase()
