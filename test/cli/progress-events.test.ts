import { describe, expect, it } from "@effect/vitest"
import type * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { jsonProgress } from "../../src/cli/progress.js"
import { ProgressReporter } from "../../src/core/progress.js"

/** What the reporter writes on stderr, captured through Effect's Console. */
const stderrOf = <A, E>(effect: Effect.Effect<A, E, ProgressReporter>) =>
  Effect.gen(function* () {
    const lines: Array<string> = []
    const real = yield* Effect.console
    const recording: Console.Console = { ...real, error: (...args) => Effect.sync(() => void lines.push(args.join(" "))) }
    yield* Effect.withConsole(Effect.provide(effect, jsonProgress), recording)
    return lines.map((line) => JSON.parse(line) as Record<string, unknown>)
  })

describe("rivet run --json progress events", () => {
  it.effect("carry estimated_rows: the source's estimate, null when unknown", () =>
    Effect.gen(function* () {
      const base = { exportName: "orders", startedAt: Date.now() - 2000, rows: 500, bytes: 10, parts: 0, retries: 0 }
      const events = yield* stderrOf(
        Effect.flatMap(ProgressReporter, (reporter) =>
          Effect.zipRight(reporter.tick({ ...base, estimatedRows: 2000 }), reporter.tick(base))
        )
      )
      expect(events.map((event) => [event["event"], event["export"], event["rows"], event["estimated_rows"]])).toEqual([
        ["progress", "orders", 500, 2000],
        ["progress", "orders", 500, null]
      ])
    })
  )
})
