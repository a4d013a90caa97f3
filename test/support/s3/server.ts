import { randomBytes } from "node:crypto"
import { createReadStream } from "node:fs"
import { mkdir, mkdtemp, rm } from "node:fs/promises"
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import { tmpdir } from "node:os"
import { join } from "node:path"
import { pipeline } from "node:stream/promises"
import S3rver from "s3rver"
import { stageBody } from "./body.js"
import { ConditionalWrites } from "./conditional.js"
import {
  faultKind,
  isLostResponse,
  makeFaultTable,
  seededRandom,
  type FaultInjector,
  type FaultRule,
  type FaultTable,
  type LostResponse
} from "./faults.js"
import { encodeKey, MultipartStore, type Exchange } from "./multipart.js"
import { denial, hidesMissingKey, type Policies } from "./iam.js"
import { classify, type Target } from "./operation.js"
import { verifySigV4 } from "./sigv4.js"
import { makeUpstream, relayedHeaders, upstreamHeaders, upstreamUrl, type Upstream } from "./upstream.js"
import { S3Failure, s3Error, sendError, xmlValues } from "./xml.js"

export type { FaultInjector, FaultResponse, FaultRule } from "./faults.js"

/** A loopback S3 endpoint for tests: s3rver behind a front end that verifies SigV4, decodes aws-chunked and does multipart. */
export interface S3TestServer {
  readonly endpoint: string
  readonly region: string
  /** The valid key pair (the secret is random per server unless given). */
  readonly credentials: { accessKeyId: string; secretAccessKey: string }
  /** The helpers below talk to s3rver directly: they are not logged and faults do not apply. */
  createBucket(name: string): Promise<void>
  listObjects(bucket: string, prefix?: string): Promise<Array<{ key: string; size: number }>>
  getObject(bucket: string, key: string): Promise<Uint8Array>
  /** In-progress multipart uploads. */
  listMultipartUploads(bucket: string): Promise<Array<{ key: string; uploadId: string }>>
  faults: FaultInjector
  /**
   * Requests received by the front end, in arrival order; status is 0 while pending or when the connection was reset.
   * `at` is the arrival time (Date.now()); `fault` the {@link faultKind} injected into the request, if any.
   */
  requests(): ReadonlyArray<LoggedRequest>
  /** Ends every stall now: the stalled requests go on as if their `stallMs` had passed. */
  releaseStalls(): void
  stop(): Promise<void>
}

/** One request as the front end logged it. */
export interface LoggedRequest {
  method: string
  path: string
  operation: string
  status: number
  at: number
  fault?: string
}

/**
 * Starts s3rver and the front end on random loopback ports, with fresh temp directories. `faultSeed` makes fault
 * `rate`s and response choices replayable (default: Math.random).
 */
export async function startS3Server(options?: {
  accessKeyId?: string
  secretAccessKey?: string
  /**
   * More key pairs; one with `allow` may perform only those IAM actions (`s3:PutObject`, …, see iam.ts), like an
   * IAM user whose policy allows just them: any other request gets a 403 AccessDenied.
   */
  extraCredentials?: Array<{ accessKeyId: string; secretAccessKey: string; allow?: ReadonlyArray<string> }>
  faultSeed?: number
  /** The most uploads one ListMultipartUploads page holds (S3: 1000), so that tests can make listings paginate. */
  uploadsPageSize?: number
}): Promise<S3TestServer> {
  const region = "us-east-1"
  const credentials = { accessKeyId: options?.accessKeyId ?? "AKIARIVETTESTKEY0001", secretAccessKey: options?.secretAccessKey ?? randomBytes(20).toString("base64") }
  const secrets = new Map([credentials, ...(options?.extraCredentials ?? [])].map((c) => [c.accessKeyId, c.secretAccessKey]))
  const policies: Policies = new Map(
    (options?.extraCredentials ?? []).flatMap((c) => (c.allow === undefined ? [] : [[c.accessKeyId, new Set(c.allow)] as const]))
  )
  const root = await mkdtemp(join(tmpdir(), "rivet-s3-"))
  const staging = join(root, "staging")
  const s3rver = new S3rver({ address: "127.0.0.1", port: 0, silent: true, directory: join(root, "s3rver") })
  const upstreamPort = await mkdir(staging)
    .then(() => s3rver.run())
    .then(
      (address) => address.port,
      async (error: unknown) => {
        await rm(root, { recursive: true, force: true })
        throw error
      }
    )
  const upstream = makeUpstream(upstreamPort)
  const store = new MultipartStore(staging, upstream, options?.uploadsPageSize)
  const conditional = new ConditionalWrites(upstream)
  const faults = makeFaultTable(options?.faultSeed === undefined ? Math.random : seededRandom(options.faultSeed))
  const log: Array<LoggedRequest> = []
  const stalls = new Set<() => void>()
  const front = createServer((req, res) => {
    const target = classify(req.method ?? "GET", req.url ?? "/", req.headers)
    const entry: LoggedRequest = { method: req.method ?? "GET", path: target.rawPath, operation: target.operation, status: 0, at: Date.now() }
    log.push(entry)
    res.on("finish", () => {
      entry.status = res.statusCode
    })
    const context: Context = { req, res, target, entry, upstream, store, faults, stalls, staging, policies, conditional, accessKeyId: "" }
    handle(context, (id) => secrets.get(id), region).catch((error: unknown) => failed(context, error))
  })
  // Longer than any pause in a test, so the SDK never reuses a socket the server is just closing.
  front.keepAliveTimeout = 120_000
  await new Promise<void>((resolve, reject) => front.once("error", reject).listen(0, "127.0.0.1", resolve))

  return {
    endpoint: `http://127.0.0.1:${(front.address() as AddressInfo).port}`,
    region,
    credentials,
    createBucket: async (name) => {
      const res = await upstream.fetch("PUT", `/${encodeURIComponent(name)}`, { "content-length": 0 })
      if (res.status !== 200) throw new Error(`createBucket(${name}) failed: ${res.status} ${res.body.toString("utf8")}`)
    },
    listObjects: (bucket, prefix = "") => listAll(upstream, bucket, prefix),
    getObject: async (bucket, key) => {
      const res = await upstream.fetch("GET", `/${encodeURIComponent(bucket)}/${encodeKey(key)}`)
      if (res.status !== 200) throw new Error(`getObject(${bucket}, ${key}) failed: ${res.status} ${res.body.toString("utf8")}`)
      return new Uint8Array(res.body.buffer, res.body.byteOffset, res.body.byteLength)
    },
    listMultipartUploads: async (bucket) => store.list(bucket).map(({ key, uploadId }) => ({ key, uploadId })),
    faults: {
      add: (rule: FaultRule) => faults.add(rule),
      clear: () => faults.clear(),
      injected: () => faults.injected(),
      injectedByKind: () => faults.injectedByKind()
    },
    requests: () => log.map((e) => ({ ...e })),
    releaseStalls: () => {
      for (const wake of stalls) wake()
    },
    stop: async () => {
      for (const wake of stalls) wake()
      await stopServer(front)
      upstream.close()
      await s3rver.close()
      await store.clear()
      await rm(root, { recursive: true, force: true })
    }
  }
}

interface Context {
  readonly req: IncomingMessage
  readonly res: ServerResponse
  readonly target: Target
  readonly entry: LoggedRequest
  readonly upstream: Upstream
  readonly store: MultipartStore
  readonly faults: FaultTable
  readonly stalls: Set<() => void>
  readonly staging: string
  readonly policies: Policies
  readonly conditional: ConditionalWrites
  /** The caller, once its signature is verified. */
  accessKeyId: string
}

const handle = async (ctx: Context, secretFor: (id: string) => string | undefined, region: string): Promise<void> => {
  const { req, res, target } = ctx
  const verified = verifySigV4({ method: req.method ?? "GET", url: req.url ?? "/", headers: req.headersDistinct }, { region, secretFor, now: new Date() })
  ctx.accessKeyId = verified.accessKeyId
  // As in S3, authorization comes after authentication and before anything else (faults included).
  const denied = denial(ctx.policies, verified.accessKeyId, target, req.headers)
  if (denied !== undefined) throw denied
  const fault = ctx.faults.match(target.operation, target.key)
  if (fault !== undefined && isLostResponse(fault)) {
    ctx.entry.fault = faultKind(fault)
    loseResponse(ctx, fault)
  } else if (fault !== undefined) {
    ctx.entry.fault = faultKind(fault)
    if ("reset" in fault) return void req.socket.destroy()
    if ("s3Error" in fault) throw s3Error(fault.s3Error, `Injected fault: ${fault.s3Error}`)
    if ("status" in fault) {
      await drain(req)
      return void res.writeHead(fault.status, { "content-length": 0 }).end()
    }
    await stall(ctx, fault.stallMs)
    if (req.socket.destroyed) return
  }
  if (target.bucket === undefined) return proxy(ctx)
  const exchange: Exchange = { req, res, target: { ...target, bucket: target.bucket } }
  switch (target.operation) {
    case "CreateMultipartUpload":
      return ctx.store.create(exchange)
    case "UploadPart":
      return ctx.store.uploadPart(exchange)
    case "CompleteMultipartUpload":
      return ctx.store.complete(exchange)
    case "AbortMultipartUpload":
      return ctx.store.abort(exchange)
    case "ListMultipartUploads":
      return ctx.store.listUploads(exchange)
    case "ListParts":
      return ctx.store.listParts(exchange)
    case "PutObject":
      if (req.headers["if-none-match"] === "*") return ctx.conditional.createOnly(target.bucket, target.key ?? "", () => proxy(ctx))
      return proxy(ctx)
    case "UploadPartCopy":
      throw new S3Failure(501, "NotImplemented", "UploadPartCopy is not implemented by the S3 test server")
    default:
      return proxy(ctx)
  }
}

/** Forwards to s3rver: bodies (PUT/POST) are decoded and verified into a staging file first, then streamed on. */
const proxy = async ({ req, res, target, upstream, store, staging, policies, accessKeyId }: Context): Promise<void> => {
  const method = req.method ?? "GET"
  const hasBody = method === "PUT" || method === "POST"
  const staged = hasBody ? await stageBody(req, join(staging, `body-${randomBytes(8).toString("hex")}`)) : undefined
  if (!hasBody) req.resume()
  try {
    const headers = { ...upstreamHeaders(req), ...(staged !== undefined ? { "content-length": staged.size } : {}) }
    const upstreamRes = await upstream.send(method, upstreamUrl(req.url ?? "/"), headers, staged && createReadStream(staged.path))
    if (upstreamRes.statusCode === 404 && hidesMissingKey(policies, accessKeyId, target)) {
      upstreamRes.resume()
      throw s3Error("AccessDenied", "Access Denied")
    }
    const relayed = relayedHeaders(upstreamRes.headers)
    if ((method === "GET" || method === "HEAD") && target.bucket !== undefined && target.key !== undefined) {
      const etag = store.etagFor(target.bucket, target.key, upstreamRes.headers.etag)
      if (etag !== undefined) relayed["etag"] = etag
    }
    if (target.operation === "PutObject" && upstreamRes.statusCode === 200) {
      for (const [algorithm, value] of staged?.checksums ?? []) relayed[`x-amz-checksum-${algorithm}`] = value
    }
    res.writeHead(upstreamRes.statusCode ?? 502, relayed)
    await pipeline(upstreamRes, res)
  } finally {
    if (staged !== undefined) await rm(staged.path, { force: true })
  }
}

/**
 * Lets the request do its work, then loses the response it ends with: the socket is reset instead, or the response
 * waits (woken early by `stop()`) and is dropped if the client has hung up by then. Multipart responses are written
 * whole by one `end` (Node sends `writeHead`'s headers with the body), so holding `end` holds everything.
 */
const loseResponse = (ctx: Context, fault: LostResponse): void => {
  const { req, res } = ctx
  const end = res.end.bind(res) as (...args: Array<unknown>) => ServerResponse
  const held = (...args: Array<unknown>): ServerResponse => {
    if ("resetAfterWork" in fault) {
      req.socket.destroy()
    } else {
      void stall(ctx, fault.delayResponseMs).then(() => {
        if (!req.socket.destroyed) end(...args)
      })
    }
    return res
  }
  res.end = held as unknown as ServerResponse["end"]
}

const stall = (ctx: Context, ms: number): Promise<void> =>
  new Promise((resolve) => {
    const wake = () => {
      clearTimeout(timer)
      ctx.stalls.delete(wake)
      ctx.req.socket.off("close", wake)
      resolve()
    }
    const timer = setTimeout(wake, ms)
    ctx.stalls.add(wake)
    ctx.req.socket.once("close", wake)
  })

/** Reads and discards the rest of a request body, so an early error response does not break the client's upload. */
const drain = (req: IncomingMessage): Promise<void> =>
  req.complete || req.destroyed
    ? Promise.resolve()
    : new Promise((resolve) => {
        req.once("end", resolve).once("close", resolve).resume()
      })

const failed = async ({ req, res, target }: Context, error: unknown): Promise<void> => {
  if (res.headersSent || req.socket.destroyed) return void res.destroy()
  if (error instanceof S3Failure) {
    await drain(req)
    if (!req.socket.destroyed) sendError(res, req.method ?? "GET", error, target.rawPath)
    return
  }
  if (isDisconnect(error)) return void res.destroy()
  process.stderr.write(`S3 test server bug while handling ${req.method} ${req.url}: ${error instanceof Error ? error.stack : String(error)}\n`)
  await drain(req)
  sendError(res, req.method ?? "GET", new S3Failure(500, "InternalError", `S3 test server bug: ${String(error)}`), target.rawPath)
}

const isDisconnect = (error: unknown): boolean =>
  error instanceof Error && ["ECONNRESET", "EPIPE", "ERR_STREAM_PREMATURE_CLOSE", "ECONNABORTED"].includes((error as NodeJS.ErrnoException).code ?? "")

const stopServer = (server: Server): Promise<void> =>
  new Promise((resolve) => {
    server.close(() => resolve())
    server.closeAllConnections()
  })

const listAll = async (upstream: Upstream, bucket: string, prefix: string): Promise<Array<{ key: string; size: number }>> => {
  const objects: Array<{ key: string; size: number }> = []
  let token: string | undefined
  do {
    const query = `list-type=2&prefix=${encodeURIComponent(prefix)}${token === undefined ? "" : `&continuation-token=${encodeURIComponent(token)}`}`
    const res = await upstream.fetch("GET", `/${encodeURIComponent(bucket)}?${query}`)
    const xml = res.body.toString("utf8")
    if (res.status !== 200) throw new Error(`listObjects(${bucket}) failed: ${res.status} ${xml}`)
    for (const contents of xmlValues(xml, "Contents")) {
      objects.push({ key: xmlValues(contents, "Key")[0] ?? "", size: Number(xmlValues(contents, "Size")[0]) })
    }
    token = xmlValues(xml, "IsTruncated")[0] === "true" ? xmlValues(xml, "NextContinuationToken")[0] : undefined
  } while (token !== undefined)
  return objects
}
