import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import type { SinkError } from "../core/errors.js"
import type { PendingUpload, SinkDriverShape } from "../core/plugin.js"
import type { ProgressReporterShape } from "../core/progress.js"
import { type RetryPolicy, withRetry } from "../core/retry.js"

/**
 * What one run may have begun uploads under: the exact keys this thread began multipart uploads at, and the key
 * prefixes of units that ran elsewhere (a chunk in a worker thread, whose keys this thread never sees).
 */
export class UploadLedger {
  private readonly keys = new Set<string>()
  private readonly prefixes = new Set<string>()

  /** `keyPrefix`: where the run's part names start under the destination (a table's `data/`). */
  constructor(private readonly keyPrefix = "") {}

  noteKey(key: string): void {
    this.keys.add(key)
  }

  notePrefix(prefix: string): void {
    this.prefixes.add(`${this.keyPrefix}${prefix}`)
  }

  get isEmpty(): boolean {
    return this.keys.size === 0 && this.prefixes.size === 0
  }

  /** Whether a listed upload's key is one this run may have begun. */
  covers(key: string): boolean {
    return this.keys.has(key) || [...this.prefixes].some((prefix) => key.startsWith(prefix))
  }

  /** The longest prefix all entries share: one listing (paginated) finds every upload the run may have left. */
  listingPrefix(): string {
    const entries = [...this.keys, ...this.prefixes]
    let shared = entries[0] ?? ""
    for (const entry of entries) {
      let length = 0
      while (length < shared.length && length < entry.length && shared[length] === entry[length]) length++
      shared = shared.slice(0, length)
    }
    return shared
  }
}

/**
 * Lists the destination's pending uploads under `listingPrefix` and aborts those `covers` claims, each request
 * retried by the policy. Every abort is tried even when one fails; the first failure is then reported. Returns the
 * keys of the uploads aborted. A destination without pending uploads (local, stdout) has nothing to do.
 */
export const abortPendingUploads = (
  sink: SinkDriverShape,
  listingPrefix: string,
  covers: (key: string) => boolean,
  retry: RetryPolicy,
  onRetry: (error: SinkError) => void = () => {}
): Effect.Effect<ReadonlyArray<string>, SinkError> =>
  Effect.gen(function* () {
    const pending = sink.pendingUploads
    if (pending === undefined) return []
    const listed = yield* withRetry(pending.list(listingPrefix), retry, onRetry)
    const outcomes = yield* Effect.forEach(
      listed.filter((upload: PendingUpload) => covers(upload.key)),
      (upload) => Effect.either(Effect.as(withRetry(pending.abort(upload), retry, onRetry), upload.key))
    )
    const failure = outcomes.find(Either.isLeft)
    if (failure !== undefined) return yield* Effect.fail(failure.left)
    return outcomes.filter(Either.isRight).map((outcome) => outcome.right)
  }).pipe(Effect.withSpan("Uploads.abortPending"))

/** Aborts the pending uploads at exactly `key`: those a failed, retried or interrupted `begin` may have created. */
export const abortPendingAt = (
  sink: SinkDriverShape,
  key: string,
  retry: RetryPolicy,
  onRetry?: (error: SinkError) => void
): Effect.Effect<ReadonlyArray<string>, SinkError> =>
  abortPendingUploads(sink, key, (listed) => listed === key, retry, onRetry)

/**
 * The end of every export that began uploads, whatever its outcome: aborts the uploads still pending under the
 * run's keys, which every unit has completed or aborted by now — what is left is what a lost response or an
 * interrupted request created behind a handle's back, what a cleanup inside a unit could not reach, or (under the
 * run's whole part stem, noted for a resumed run and for the publisher of a distributed run) what a killed earlier
 * attempt or a dead worker left open. Never fails
 * the export: a listing refused (no s3:ListBucketMultipartUploads) or an abort that fails after its retries is a
 * notice, since the data written is unaffected.
 */
export const cleanUpRunUploads = (
  sink: SinkDriverShape,
  ledger: UploadLedger,
  retry: RetryPolicy,
  reporter: ProgressReporterShape,
  exportName: string
): Effect.Effect<void> =>
  Effect.suspend(() => {
    if (sink.pendingUploads === undefined || ledger.isEmpty) return Effect.void
    return abortPendingUploads(sink, ledger.listingPrefix(), (key) => ledger.covers(key), retry).pipe(
      Effect.flatMap((aborted) =>
        aborted.length === 0
          ? Effect.void
          : reporter.notice(
              exportName,
              `aborted ${aborted.length} multipart upload(s) left open by a killed earlier attempt, a lost response or an interrupted request: ${aborted.join(", ")}`
            )
      ),
      Effect.catchAll((error) =>
        reporter.notice(
          exportName,
          `could not check for multipart uploads left open (${error.message}). ${error.hint ?? "An open upload is invisible but stored (and billed) until it is aborted: a bucket lifecycle rule AbortIncompleteMultipartUpload removes it."}`
        )
      )
    )
  })
