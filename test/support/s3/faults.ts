/** Operations a fault rule can target ("*" = any request). */
export type FaultOperation =
  | "PutObject"
  | "CreateMultipartUpload"
  | "UploadPart"
  | "CompleteMultipartUpload"
  | "AbortMultipartUpload"
  | "HeadBucket"
  | "GetBucketLocation"
  | "DeleteObject"
  | "GetObject"
  | "ListObjectsV2"
  | "ListMultipartUploads"
  | "ListParts"
  | "*"

/** What an injected fault does to a request. */
export type FaultResponse =
  | { status: 500 | 503 }
  | { s3Error: "SlowDown" | "AccessDenied" | "SignatureDoesNotMatch" | "InternalError" | "NoSuchBucket" }
  | { reset: true }
  | { stallMs: number }
  | LostResponse

/**
 * The request is carried out, then its response is lost: the connection is reset instead (`resetAfterWork`), or
 * the response is held back `delayResponseMs` and dropped if the client hangs up meanwhile. Only for the operations
 * the front end answers itself ({@link LOSABLE_OPERATIONS}): a proxied response streams out as it arrives.
 */
export type LostResponse = { resetAfterWork: true } | { delayResponseMs: number }

/** The multipart operations, which the front end answers with one complete response. */
export const LOSABLE_OPERATIONS: ReadonlyArray<FaultOperation> = [
  "CreateMultipartUpload",
  "UploadPart",
  "CompleteMultipartUpload",
  "AbortMultipartUpload",
  "ListMultipartUploads",
  "ListParts"
]

export const isLostResponse = (response: FaultResponse): response is LostResponse =>
  "resetAfterWork" in response || "delayResponseMs" in response

/** One fault to inject into matching requests (checked after signature verification, before any work). */
export interface FaultRule {
  /** One operation, or any of several. */
  operation?: FaultOperation | ReadonlyArray<FaultOperation>
  /** Tested against the decoded object key; requests without a key never match a rule with a pattern. */
  keyPattern?: RegExp
  /** What to do; given several, each injection picks one uniformly with the table's random source. */
  respond: FaultResponse | ReadonlyArray<FaultResponse>
  /** probability 0..1 per matching request (default 1), and/or a maximum number of times (default unlimited) */
  rate?: number
  times?: number
}

/** Registers fault rules and counts how many faults were injected. */
export interface FaultInjector {
  add(rule: FaultRule): void
  clear(): void
  injected(): number
  /** Injected faults per {@link faultKind}, e.g. `{ "503": 2, reset: 1 }`; kinds never injected are absent. */
  injectedByKind(): Readonly<Record<string, number>>
}

/** The injector the server consults: `match` picks the first applicable rule and consumes one of its `times`. */
export interface FaultTable extends FaultInjector {
  match(operation: string, key: string | undefined): FaultResponse | undefined
}

/** A short label for a response: `500`, `503`, the S3 error code, `reset` or `stall`. */
export const faultKind = (response: FaultResponse): string =>
  "status" in response
    ? String(response.status)
    : "s3Error" in response
      ? response.s3Error
      : "reset" in response
        ? "reset"
        : "resetAfterWork" in response
          ? "reset-after-work"
          : "delayResponseMs" in response
            ? "delayed-response"
            : "stall"

/** The requests that write object data. */
export const WRITE_FAULT_OPERATIONS: ReadonlyArray<FaultOperation> = [
  "PutObject",
  "CreateMultipartUpload",
  "UploadPart",
  "CompleteMultipartUpload"
]

/**
 * Transient faults a real S3 endpoint produces, at `rate` per write request: 500, 503, SlowDown, InternalError, a
 * reset connection, or a stall of `stallMs` (keep it below the client's idle timeout: it then only delays).
 */
export const transientMix = (rate: number, stallMs = 300): FaultRule => ({
  operation: WRITE_FAULT_OPERATIONS,
  rate,
  respond: [
    { status: 500 },
    { status: 503 },
    { s3Error: "SlowDown" },
    { s3Error: "InternalError" },
    { reset: true },
    { stallMs }
  ]
})

/** A seeded PRNG (mulberry32) in [0, 1): the same seed draws the same sequence, so a fault pattern can be replayed. */
export const seededRandom = (seed: number): (() => number) => {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const targets = (rule: FaultRule, operation: string): boolean => {
  const wanted = rule.operation
  if (wanted === undefined || wanted === "*") return true
  return typeof wanted === "string" ? wanted === operation : wanted.some((op) => op === "*" || op === operation)
}

/** Creates an empty fault table. `random` is injectable so `rate` can be tested deterministically. */
export const makeFaultTable = (random: () => number = Math.random): FaultTable => {
  let rules: Array<{ rule: FaultRule; remaining: number }> = []
  const byKind = new Map<string, number>()
  let injected = 0
  return {
    add: (rule) => {
      if (rule.rate !== undefined && !(rule.rate >= 0 && rule.rate <= 1)) throw new RangeError(`FaultRule.rate must be within 0..1, got ${rule.rate}`)
      if (isList(rule.respond) && rule.respond.length === 0) throw new RangeError("FaultRule.respond must not be an empty list")
      const responses: ReadonlyArray<FaultResponse> = isList(rule.respond) ? rule.respond : [rule.respond]
      const operations: ReadonlyArray<FaultOperation> = rule.operation === undefined ? ["*"] : typeof rule.operation === "string" ? [rule.operation] : rule.operation
      if (responses.some(isLostResponse) && !operations.every((op) => LOSABLE_OPERATIONS.includes(op))) {
        throw new RangeError(`a lost response (resetAfterWork, delayResponseMs) needs operation: one or more of ${LOSABLE_OPERATIONS.join(", ")}`)
      }
      rules.push({ rule, remaining: rule.times ?? Number.POSITIVE_INFINITY })
    },
    clear: () => {
      rules = []
    },
    injected: () => injected,
    injectedByKind: () => Object.fromEntries(byKind),
    match: (operation, key) => {
      for (const entry of rules) {
        const { rule } = entry
        if (entry.remaining <= 0) continue
        if (!targets(rule, operation)) continue
        if (rule.keyPattern !== undefined) {
          rule.keyPattern.lastIndex = 0 // a /g pattern would otherwise alternate between matching and not
          if (key === undefined || !rule.keyPattern.test(key)) continue
        }
        if (rule.rate !== undefined && random() >= rule.rate) continue
        const response = isList(rule.respond) ? pick(rule.respond, random) : rule.respond
        entry.remaining -= 1
        injected += 1
        byKind.set(faultKind(response), (byKind.get(faultKind(response)) ?? 0) + 1)
        return response
      }
      return undefined
    }
  }
}

const isList = (respond: FaultRule["respond"]): respond is ReadonlyArray<FaultResponse> => Array.isArray(respond)

const pick = (choices: ReadonlyArray<FaultResponse>, random: () => number): FaultResponse =>
  choices[Math.min(choices.length - 1, Math.floor(random() * choices.length))]!
