import { createHash, createHmac, timingSafeEqual } from "node:crypto"
import { s3Error } from "./xml.js"

/** The parts of an incoming request that SigV4 covers. */
export interface SignedRequest {
  readonly method: string
  /** Raw request target: path plus query, exactly as received. */
  readonly url: string
  /** Lower-case header names (node's `headersDistinct` shape works). */
  readonly headers: Readonly<Record<string, string | ReadonlyArray<string> | undefined>>
}

/** What a successful verification tells the caller. */
export interface Verified {
  readonly accessKeyId: string
  /** The `x-amz-content-sha256` the signature covers (hex digest, UNSIGNED-PAYLOAD or STREAMING-…). */
  readonly payloadHash: string
}

export interface VerifyOptions {
  readonly region: string
  readonly secretFor: (accessKeyId: string) => string | undefined
  readonly now: Date
}

const ALGORITHM = "AWS4-HMAC-SHA256"
const MAX_SKEW_MS = 15 * 60 * 1000

/**
 * Verifies an AWS Signature Version 4 (header or presigned-query form) the way S3 does, written
 * from the spec rather than reusing the SDK's signer, so it is an independent check of it.
 * Throws an S3Failure (InvalidAccessKeyId, SignatureDoesNotMatch, AccessDenied, …).
 */
export const verifySigV4 = (req: SignedRequest, options: VerifyOptions): Verified => {
  const [rawPath = "/", rawQuery = ""] = splitOnce(req.url, "?")
  const query = parseQuery(rawQuery)
  const authorization = header(req, "authorization")
  const presigned = query.some(([k]) => k === "X-Amz-Algorithm")
  if (authorization !== undefined && presigned) throw s3Error("InvalidArgument", "Only one auth mechanism allowed")
  if (authorization === undefined && !presigned) throw s3Error("AccessDenied", "Access Denied (the request is not signed)")

  const auth = presigned ? fromQuery(query) : fromHeader(authorization ?? "", req)
  const secret = options.secretFor(auth.accessKeyId)
  if (secret === undefined) {
    throw s3Error("InvalidAccessKeyId", "The AWS Access Key Id you provided does not exist in our records.", { AWSAccessKeyId: auth.accessKeyId })
  }
  checkScope(auth, options)
  const signingTime = parseAmzDate(auth.amzDate)
  if (presigned) {
    if (options.now.getTime() > signingTime + auth.expiresSeconds * 1000) throw s3Error("AccessDenied", "Request has expired")
  } else if (Math.abs(options.now.getTime() - signingTime) > MAX_SKEW_MS) {
    throw s3Error("RequestTimeTooSkewed", "The difference between the request time and the current time is too large.")
  }

  const canonicalQuery = query
    .filter(([k]) => !(presigned && k === "X-Amz-Signature"))
    .map(([k, v]) => [uriEncode(k), uriEncode(v)] as const)
    .sort(([ka, va], [kb, vb]) => (ka < kb ? -1 : ka > kb ? 1 : va < vb ? -1 : va > vb ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join("&")
  const canonicalHeaders = auth.signedHeaders.map((name) => `${name}:${canonicalHeaderValue(req.headers[name])}\n`).join("")
  const canonicalRequest = [req.method, canonicalUri(rawPath), canonicalQuery, canonicalHeaders, auth.signedHeaders.join(";"), auth.payloadHash].join("\n")
  const stringToSign = [ALGORITHM, auth.amzDate, auth.scope.join("/"), sha256Hex(canonicalRequest)].join("\n")
  const key = [auth.scope[1], auth.scope[2], "aws4_request"].reduce<Buffer>(
    (k, part) => hmac(k, part ?? ""),
    hmac(`AWS4${secret}`, auth.scope[0] ?? "")
  )
  const expected = hmac(key, stringToSign)
  const given = Buffer.from(auth.signature, "hex")
  if (given.length !== expected.length || !timingSafeEqual(given, expected)) {
    throw s3Error(
      "SignatureDoesNotMatch",
      "The request signature we calculated does not match the signature you provided. Check your key and signing method.",
      { AWSAccessKeyId: auth.accessKeyId, StringToSign: stringToSign, CanonicalRequest: canonicalRequest }
    )
  }
  return { accessKeyId: auth.accessKeyId, payloadHash: auth.payloadHash }
}

interface AuthParts {
  readonly accessKeyId: string
  /** [yyyymmdd, region, service, "aws4_request"] */
  readonly scope: ReadonlyArray<string>
  readonly amzDate: string
  readonly signedHeaders: ReadonlyArray<string>
  readonly signature: string
  readonly payloadHash: string
  readonly expiresSeconds: number
}

const fromHeader = (authorization: string, req: SignedRequest): AuthParts => {
  if (!authorization.startsWith(`${ALGORITHM} `)) {
    throw s3Error("InvalidRequest", "The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.")
  }
  const fields = new Map(
    authorization
      .slice(ALGORITHM.length + 1)
      .split(",")
      .map((part): [string, string | undefined] => {
        const [name, value] = splitOnce(part.trim(), "=")
        return [name, value]
      })
  )
  const credential = fields.get("Credential")
  const signedHeaders = fields.get("SignedHeaders")
  const signature = fields.get("Signature")
  if (credential === undefined || signedHeaders === undefined || signature === undefined) {
    throw s3Error("AuthorizationHeaderMalformed", "The authorization header is malformed; it must contain Credential, SignedHeaders and Signature.")
  }
  const amzDate = header(req, "x-amz-date")
  if (amzDate === undefined) throw s3Error("AccessDenied", "AWS authentication requires a valid Date or x-amz-date header")
  const payloadHash = header(req, "x-amz-content-sha256")
  if (payloadHash === undefined) throw s3Error("InvalidRequest", "Missing required header for this request: x-amz-content-sha256")
  return { ...credentialParts(credential), amzDate, signedHeaders: signedHeaders.split(";"), signature, payloadHash, expiresSeconds: 0 }
}

const fromQuery = (query: ReadonlyArray<readonly [string, string]>): AuthParts => {
  const get = (name: string): string => {
    const value = query.find(([k]) => k === name)?.[1]
    if (value === undefined) throw s3Error("AuthorizationQueryParametersError", `Query-string authentication requires the ${name} parameter`)
    return value
  }
  if (get("X-Amz-Algorithm") !== ALGORITHM) throw s3Error("AuthorizationQueryParametersError", `X-Amz-Algorithm only supports "${ALGORITHM}"`)
  const expiresSeconds = Number(get("X-Amz-Expires"))
  if (!Number.isInteger(expiresSeconds) || expiresSeconds < 1 || expiresSeconds > 604800) {
    throw s3Error("AuthorizationQueryParametersError", "X-Amz-Expires must be an integer between 1 and 604800")
  }
  const payloadHash = query.find(([k]) => k.toLowerCase() === "x-amz-content-sha256")?.[1] ?? "UNSIGNED-PAYLOAD"
  return {
    ...credentialParts(get("X-Amz-Credential")),
    amzDate: get("X-Amz-Date"),
    signedHeaders: get("X-Amz-SignedHeaders").split(";"),
    signature: get("X-Amz-Signature"),
    payloadHash,
    expiresSeconds
  }
}

const credentialParts = (credential: string): Pick<AuthParts, "accessKeyId" | "scope"> => {
  const parts = credential.split("/")
  if (parts.length !== 5 || parts[4] !== "aws4_request") {
    throw s3Error("AuthorizationHeaderMalformed", `The credential '${credential}' is malformed; expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".`)
  }
  return { accessKeyId: parts[0] ?? "", scope: parts.slice(1) }
}

const checkScope = (auth: AuthParts, options: VerifyOptions): void => {
  const [date, region, service] = auth.scope
  if (date !== auth.amzDate.slice(0, 8)) {
    throw s3Error("AuthorizationHeaderMalformed", `Invalid credential date "${date ?? ""}". This date is not the same as X-Amz-Date: "${auth.amzDate.slice(0, 8)}".`)
  }
  if (region !== options.region) {
    throw s3Error("AuthorizationHeaderMalformed", `The authorization header is malformed; the region '${region ?? ""}' is wrong; expecting '${options.region}'`, { Region: options.region })
  }
  if (service !== "s3") throw s3Error("AuthorizationHeaderMalformed", `The authorization header is malformed; incorrect service "${service ?? ""}". This endpoint belongs to "s3".`)
}

const parseAmzDate = (amzDate: string): number => {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(amzDate)
  if (m === null) throw s3Error("AccessDenied", `X-Amz-Date "${amzDate}" must be in the ISO8601 basic format yyyyMMdd'T'HHmmss'Z'`)
  return Date.UTC(Number(m[1]), Number(m[2]) - 1, Number(m[3]), Number(m[4]), Number(m[5]), Number(m[6]))
}

/** S3 canonical URI: each path segment decoded once and re-encoded strictly (S3 does not double-encode). */
const canonicalUri = (rawPath: string): string => rawPath.split("/").map((segment) => uriEncode(safeDecode(segment))).join("/")

/** SigV4 UriEncode: everything but RFC 3986 unreserved characters is percent-encoded (upper-case hex). */
export const uriEncode = (text: string): string =>
  encodeURIComponent(text).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`)

/** Raw query string → decoded [name, value] pairs in order (a bare `uploads` gives ["uploads", ""]). */
export const parseQuery = (rawQuery: string): Array<readonly [string, string]> =>
  rawQuery
    .split("&")
    .filter((piece) => piece.length > 0)
    .map((piece) => {
      const [k = "", v = ""] = splitOnce(piece, "=")
      return [safeDecode(k), safeDecode(v)] as const
    })

const canonicalHeaderValue = (value: string | ReadonlyArray<string> | undefined): string =>
  (typeof value === "string" ? [value] : (value ?? [])).map((v) => v.trim().replace(/\s+/g, " ")).join(",")

const header = (req: SignedRequest, name: string): string | undefined => {
  const value = req.headers[name]
  return typeof value === "string" ? value : value?.join(",")
}

const splitOnce = (text: string, separator: string): [string, string?] => {
  const at = text.indexOf(separator)
  return at < 0 ? [text] : [text.slice(0, at), text.slice(at + separator.length)]
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

const sha256Hex = (text: string): string => createHash("sha256").update(text, "utf8").digest("hex")
const hmac = (key: string | Buffer, data: string): Buffer => createHmac("sha256", key).update(data, "utf8").digest()
