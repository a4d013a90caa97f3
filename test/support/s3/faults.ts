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
  | "*"

/** One fault to inject into matching requests (checked after signature verification, before any work). */
export interface FaultRule {
  operation?: FaultOperation
  /** Tested against the decoded object key; requests without a key never match a rule with a pattern. */
  keyPattern?: RegExp
  /** what to do */
  respond: { status: 500 | 503 } | { s3Error: "SlowDown" | "AccessDenied" | "SignatureDoesNotMatch" | "InternalError" | "NoSuchBucket" } | { reset: true } | { stallMs: number }
  /** probability 0..1 per matching request (default 1), and/or a maximum number of times (default unlimited) */
  rate?: number
  times?: number
}

/** Registers fault rules and counts how many faults were injected. */
export interface FaultInjector {
  add(rule: FaultRule): void
  clear(): void
  injected(): number
}

/** The injector the server consults: `match` picks the first applicable rule and consumes one of its `times`. */
export interface FaultTable extends FaultInjector {
  match(operation: string, key: string | undefined): FaultRule["respond"] | undefined
}

/** Creates an empty fault table. `random` is injectable so `rate` can be tested deterministically. */
export const makeFaultTable = (random: () => number = Math.random): FaultTable => {
  let rules: Array<{ rule: FaultRule; remaining: number }> = []
  let injected = 0
  return {
    add: (rule) => {
      if (rule.rate !== undefined && !(rule.rate >= 0 && rule.rate <= 1)) throw new RangeError(`FaultRule.rate must be within 0..1, got ${rule.rate}`)
      rules.push({ rule, remaining: rule.times ?? Number.POSITIVE_INFINITY })
    },
    clear: () => {
      rules = []
    },
    injected: () => injected,
    match: (operation, key) => {
      for (const entry of rules) {
        const { rule } = entry
        if (entry.remaining <= 0) continue
        if (rule.operation !== undefined && rule.operation !== "*" && rule.operation !== operation) continue
        if (rule.keyPattern !== undefined) {
          rule.keyPattern.lastIndex = 0 // a /g pattern would otherwise alternate between matching and not
          if (key === undefined || !rule.keyPattern.test(key)) continue
        }
        if (rule.rate !== undefined && random() >= rule.rate) continue
        entry.remaining -= 1
        injected += 1
        return rule.respond
      }
      return undefined
    }
  }
}
