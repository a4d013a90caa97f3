import { Agent, request, type IncomingHttpHeaders, type IncomingMessage, type OutgoingHttpHeaders } from "node:http"
import type { Readable } from "node:stream"
import { pipeline } from "node:stream/promises"
import { contentEncodings } from "./body.js"

/** Talks to the s3rver instance behind the front end (anonymously: s3rver lets unsigned requests through). */
export interface Upstream {
  /** Sends a request; `body` is streamed and must match `content-length` when given. Resolves on response headers. */
  send(method: string, url: string, headers: OutgoingHttpHeaders, body?: Readable): Promise<IncomingMessage>
  /** Sends a request and reads the whole (small) response body. */
  fetch(method: string, url: string, headers?: OutgoingHttpHeaders, body?: Readable): Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>
  bucketExists(bucket: string): Promise<boolean>
  close(): void
}

/** Creates the s3rver client for `http://127.0.0.1:<port>`. */
export const makeUpstream = (port: number): Upstream => {
  // No keep-alive: a pooled socket that s3rver closes after its idle timeout could race with the
  // next request and surface as a spurious reset to the client.
  const agent = new Agent({ keepAlive: false })
  const send: Upstream["send"] = (method, url, headers, body) =>
    new Promise((resolve, reject) => {
      const req = request({ host: "127.0.0.1", port, method, path: url, headers, agent }, resolve)
      req.on("error", reject)
      if (body === undefined) req.end()
      else pipeline(body, req).catch((error: unknown) => req.destroy(error instanceof Error ? error : new Error(String(error))))
    })
  const fetch: Upstream["fetch"] = async (method, url, headers = {}, body) => {
    const res = await send(method, url, headers, body)
    const chunks: Array<Buffer> = []
    for await (const chunk of res) chunks.push(chunk as Buffer)
    return { status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }
  }
  return {
    send,
    fetch,
    bucketExists: async (bucket) => (await fetch("HEAD", `/${encodeURIComponent(bucket)}`)).status === 200,
    close: () => agent.destroy()
  }
}

/** Headers that only concern the hop to the front end, its authentication or the aws-chunked framing. */
const DROPPED = new Set([
  "authorization",
  "host",
  "connection",
  "keep-alive",
  "transfer-encoding",
  "content-length",
  "content-md5",
  "expect",
  "te",
  "upgrade",
  "x-amz-content-sha256",
  "x-amz-decoded-content-length",
  "x-amz-trailer",
  "x-amz-date",
  "x-amz-security-token",
  "x-amz-sdk-checksum-algorithm"
])

/** The client's headers as s3rver should see them (aws-chunked removed from content-encoding). */
export const upstreamHeaders = (req: IncomingMessage): OutgoingHttpHeaders => {
  const headers: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined || DROPPED.has(name) || name.startsWith("x-amz-checksum-") || name.startsWith("amz-sdk-") || name.startsWith("proxy-")) continue
    headers[name] = value
  }
  const encodings = contentEncodings(req).filter((token) => token !== "aws-chunked")
  if (encodings.length > 0) headers["content-encoding"] = encodings.join(",")
  else delete headers["content-encoding"]
  return headers
}

/** The request target without presigned-URL auth parameters (s3rver would try, and fail, to check them). */
export const upstreamUrl = (url: string): string => {
  const at = url.indexOf("?")
  if (at < 0) return url
  const kept = url
    .slice(at + 1)
    .split("&")
    .filter((piece) => piece.length > 0 && !/^x-amz-/i.test(piece))
  return kept.length > 0 ? `${url.slice(0, at)}?${kept.join("&")}` : url.slice(0, at)
}

/** Headers of an s3rver response that may be relayed to the client as they are. */
export const relayedHeaders = (headers: IncomingHttpHeaders): OutgoingHttpHeaders => {
  const out: OutgoingHttpHeaders = {}
  for (const [name, value] of Object.entries(headers)) {
    if (value !== undefined && name !== "connection" && name !== "keep-alive" && name !== "transfer-encoding") out[name] = value
  }
  return out
}
