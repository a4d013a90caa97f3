import { createHash } from "node:crypto"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { FormatError, SinkError } from "../../core/errors.js"
import type { FormatDriverShape } from "../../core/plugin.js"
import { type RetryPolicy, withRetry } from "../../core/retry.js"
import { type Finding, finding, formatCount } from "./findings.js"
import type { StoredManifest } from "./manifest-check.js"

type StoredPart = StoredManifest["parts"][number]

/** What checking the parts of one manifest needs. */
export interface PartCheckContext {
  /** Sizes of the objects listed at the destination, by key. */
  readonly listing: ReadonlyMap<string, number>
  readonly read: (key: string) => Stream.Stream<Uint8Array, SinkError>
  /** Absent when the rows of these parts cannot be counted (see `NOT_VERIFIED`). */
  readonly countRows: FormatDriverShape["countRows"]
  readonly retry: RetryPolicy
  readonly strict: boolean
}

interface Scan {
  readonly sha256: string
  /** Rows counted from the bytes, or why they could not be. */
  readonly rows: { readonly _tag: "counted"; readonly rows: number } | { readonly _tag: "unreadable"; readonly error: FormatError } | undefined
}

/**
 * Reads a part once to hash it and count its rows (the row counter's first read is the hashed one). The hash is
 * taken from a separate read only when the counter did not read the part to its end — it failed, or stopped early.
 */
const scanPart = (key: string, context: PartCheckContext): Effect.Effect<Scan, SinkError> =>
  Effect.suspend(() => {
    const hash = createHash("sha256")
    let hashing = false
    let hashed = false
    const hashingRead = () =>
      Stream.suspend(() => {
        if (hashing) return context.read(key)
        hashing = true
        return context.read(key).pipe(
          Stream.tap((chunk) => Effect.sync(() => hash.update(chunk))),
          Stream.onEnd(Effect.sync(() => (hashed = true)))
        )
      })
    const { countRows } = context
    const counted: Effect.Effect<Scan["rows"], SinkError> =
      countRows === undefined
        ? Effect.as(Stream.runDrain(hashingRead()), undefined)
        : countRows(key, hashingRead).pipe(
            Effect.map((rows) => ({ _tag: "counted" as const, rows })),
            Effect.catchTag("FormatError", (error) => Effect.succeed({ _tag: "unreadable" as const, error }))
          )
    return Effect.flatMap(counted, (rows) =>
      hashed
        ? Effect.succeed({ sha256: hash.digest("hex"), rows })
        : Effect.map(
            Stream.runFold(context.read(key), createHash("sha256"), (fresh, chunk) => fresh.update(chunk)),
            (fresh) => ({ sha256: fresh.digest("hex"), rows })
          )
    )
  })

/** Checks one part listed in the manifest: present, the recorded size, sha256 and row count. */
export const checkPart = (part: StoredPart, context: PartCheckContext): Effect.Effect<ReadonlyArray<Finding>, SinkError> => {
  const { strict } = context
  const missing = (when: string) =>
    finding("PART_MISSING", part.path, `listed in the manifest but ${when}`, strict)
  const size = context.listing.get(part.path)
  if (size === undefined) return Effect.succeed([missing("not at the destination")])
  if (size !== part.size_bytes) {
    const why = size < part.size_bytes ? "truncated" : "grew after it was written"
    const message = `${formatCount(size)} bytes but the manifest records ${formatCount(part.size_bytes)} (${why})`
    return Effect.succeed([finding("PART_SIZE_MISMATCH", part.path, message, strict)])
  }
  return withRetry(scanPart(part.path, context), context.retry, () => {}).pipe(
    Effect.map((scan): ReadonlyArray<Finding> => {
      const findings: Array<Finding> = []
      const expected = part.content_fingerprint
      if (`sha256:${scan.sha256}` !== expected) {
        const message = `sha256:${scan.sha256} expected ${expected} (same size, different bytes: modified after it was written)`
        findings.push(finding("PART_CHECKSUM_MISMATCH", part.path, message, strict))
      }
      if (scan.rows?._tag === "unreadable") {
        findings.push(finding("PART_UNREADABLE", part.path, `rows cannot be counted: ${scan.rows.error.message}`, strict))
      } else if (scan.rows !== undefined && scan.rows.rows !== part.rows) {
        const message = `${formatCount(scan.rows.rows)} rows counted but the manifest records ${formatCount(part.rows)}`
        findings.push(finding("PART_ROW_COUNT", part.path, message, strict))
      }
      return findings
    }),
    Effect.catchIf(
      (error) => error.reason === "NotFound",
      () => Effect.succeed([missing("disappeared while it was being read")])
    )
  )
}
