import * as Duration from "effect/Duration"
import * as Effect from "effect/Effect"
import * as Schedule from "effect/Schedule"

export interface RetryPolicy {
  /** Attempts after the first one. */
  readonly maxRetries: number
  readonly initialDelay: Duration.DurationInput
  readonly maxDelay: Duration.DurationInput
}

export const DEFAULT_RETRY_POLICY: RetryPolicy = {
  maxRetries: 5,
  initialDelay: "200 millis",
  maxDelay: "10 seconds"
}

const isRetryable = (error: unknown): boolean =>
  typeof error === "object" && error !== null && "retryable" in error && error.retryable === true

/**
 * Retries an operation whose failure is marked `retryable` (exponential backoff with jitter, capped),
 * calling `onRetry` before each new attempt so runs can report how many retries they needed.
 * Permanent errors fail at once. Plugins never retry; the runtime wraps their primitives with this.
 * `retryable` narrows which failures are retried (default: any marked `retryable`).
 */
export const withRetry = <A, E, R>(
  operation: Effect.Effect<A, E, R>,
  policy: RetryPolicy,
  onRetry: (error: E) => Effect.Effect<void> | void,
  retryable: (error: E) => boolean = isRetryable
): Effect.Effect<A, E, R> =>
  Effect.retry(
    Effect.tapError(operation, (error) =>
      Effect.suspend(() => {
        if (!retryable(error)) return Effect.void
        const counted = onRetry(error)
        return Effect.isEffect(counted) ? counted : Effect.void
      })
    ),
    {
      schedule: Schedule.exponential(policy.initialDelay, 2).pipe(
        Schedule.jittered,
        Schedule.modifyDelay((delay) => Duration.min(delay, Duration.decode(policy.maxDelay)))
      ),
      times: policy.maxRetries,
      while: retryable
    }
  )
