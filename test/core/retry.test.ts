import { describe, expect, it } from "@effect/vitest"
import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Ref from "effect/Ref"
import * as TestClock from "effect/TestClock"
import { type RetryPolicy, withRetry } from "../../src/core/retry.js"

/** The backoff on the test clock: no test here sleeps for real. */

class Flaky {
  readonly retryable = true
  constructor(readonly attempt: number) {}
}

class Permanent {
  readonly retryable = false
}

const policy: RetryPolicy = { maxRetries: 4, initialDelay: "1 second", maxDelay: "3 seconds" }

/** An operation failing retryably for its first `failures` attempts; the test-clock time of each attempt is kept. */
const flaky = (failures: number) =>
  Effect.gen(function* () {
    const attempts = yield* Ref.make<ReadonlyArray<number>>([])
    let retries = 0
    const operation = Effect.flatMap(Clock.currentTimeMillis, (now) =>
      Effect.flatMap(Ref.updateAndGet(attempts, (times) => [...times, now]), (times) =>
        times.length <= failures ? Effect.fail(new Flaky(times.length)) : Effect.succeed(times.length)
      )
    )
    const fiber = yield* Effect.fork(withRetry(operation, policy, () => void retries++))
    return { fiber, attempts: Ref.get(attempts), retries: () => retries }
  })

const gaps = (times: ReadonlyArray<number>) => times.slice(1).map((time, i) => time - times[i]!)

describe("withRetry", () => {
  it.effect("waits an exponentially growing, jittered delay between attempts, capped at maxDelay", () =>
    Effect.gen(function* () {
      const { fiber, attempts, retries } = yield* flaky(4)
      yield* TestClock.adjust("1 minute")
      expect(yield* Fiber.join(fiber)).toBe(5)
      expect(retries()).toBe(4)
      const [first, second, third, fourth] = gaps(yield* attempts)
      expect(first).toBeGreaterThanOrEqual(800) // 1 s ± 20 %
      expect(first).toBeLessThanOrEqual(1200)
      expect(second).toBeGreaterThanOrEqual(1600) // 2 s ± 20 %
      expect(second).toBeLessThanOrEqual(2400)
      expect([third, fourth]).toEqual([3000, 3000]) // 4 s and 8 s ± 20 %, capped at maxDelay
    })
  )

  it.effect("waits nothing real: before the first delay has passed on the test clock, one attempt was made", () =>
    Effect.gen(function* () {
      const { fiber, attempts } = yield* flaky(1)
      yield* TestClock.adjust("799 millis")
      expect((yield* attempts).length).toBe(1)
      yield* TestClock.adjust("401 millis")
      expect(yield* Fiber.join(fiber)).toBe(2)
    })
  )

  it.effect("gives up after maxRetries with the last error", () =>
    Effect.gen(function* () {
      const { fiber, attempts } = yield* flaky(Number.POSITIVE_INFINITY)
      yield* TestClock.adjust("1 minute")
      const error = yield* Effect.flip(Fiber.join(fiber))
      expect(error).toEqual(new Flaky(1 + policy.maxRetries))
      expect((yield* attempts).length).toBe(1 + policy.maxRetries)
    })
  )

  it.effect("fails at once on an error not marked retryable, without reporting a retry", () =>
    Effect.gen(function* () {
      let retries = 0
      const error = yield* Effect.flip(withRetry(Effect.fail(new Permanent()), policy, () => void retries++))
      expect(error).toBeInstanceOf(Permanent)
      expect(retries).toBe(0)
    })
  )
})
