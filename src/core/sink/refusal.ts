import { SinkError } from "../errors.js"
import type { UsageProblem } from "./primitives.js"

/** A refused request as a plugin raises it or `usageError` receives it; `reason` defaults to `Unknown`. */
export type Refused = Omit<UsageProblem, "operation" | "reason"> & {
  readonly operation: string
  readonly reason?: UsageProblem["reason"] | undefined
}

/** How a store words a refused request: its own name for the request, the key it shows, the message. */
export interface Wording {
  readonly operation: string
  readonly key: string
  readonly message: string
}

/**
 * The `usageError` of `Sink.make` for `plugin`: a non-retryable `SinkError` with the problem's reason and hint,
 * worded by `word` (default: the problem's own operation, key and message).
 */
export const usageErrors =
  (plugin: string, word: (problem: Refused) => Wording = (problem) => problem) =>
  (problem: Refused): SinkError => {
    const { operation, key, message } = word(problem)
    return new SinkError({
      plugin,
      operation,
      key,
      reason: problem.reason ?? "Unknown",
      retryable: false,
      message,
      ...(problem.hint === undefined ? {} : { hint: problem.hint })
    })
  }
