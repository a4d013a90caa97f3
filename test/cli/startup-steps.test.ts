import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { isOpen, observeStartupSteps, type OpenStep } from "../../src/cli/startup-steps.js"

describe("start-up steps seen through the tracer", () => {
  it.effect("a labelled span is handed over while open and reads as ended after; other spans are not, and keep their parent", () =>
    Effect.gen(function* () {
      const seen: Array<OpenStep> = []
      const during = yield* Effect.gen(function* () {
        const openNow = seen.map(isOpen)
        const child = yield* Effect.currentSpan.pipe(Effect.withSpan("PostgresSource.open"))
        return { openNow, parent: Option.map(child.parent, (span) => span.spanId) }
      }).pipe(Effect.withSpan("EmbeddedPostgres.start"), Effect.provide(observeStartupSteps((step) => seen.push(step))))
      expect(seen.map((step) => step.label)).toEqual(["starting the embedded PostgreSQL…"])
      expect(during.openNow).toEqual([true])
      expect(during.parent).toEqual(Option.some(seen[0]!.span.spanId))
      expect(seen.map(isOpen)).toEqual([false])
    })
  )
})
