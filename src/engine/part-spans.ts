import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import type * as Scope from "effect/Scope"
import type * as Tracer from "effect/Tracer"
import type { PartRecord } from "../core/manifest.js"
import { partUploadDuration } from "./telemetry/metrics.js"
import { perPart } from "../core/span-options.js"

interface OpenPart {
  readonly span: Tracer.Span
  readonly startedAt: number
  retries: number
}

/**
 * One span per part, from its first block to its commit, with the sink's calls for its blocks as children. A part
 * still open when the scope closes (a failed or interrupted unit) ends with the scope's exit.
 */
export const makePartSpans = (exportName: string): Effect.Effect<PartSpans, never, Scope.Scope> =>
  Effect.gen(function* () {
    const open = new Map<number, OpenPart>()
    yield* Effect.addFinalizer((exit) =>
      Effect.flatMap(Clock.currentTimeNanos, (now) =>
        Effect.sync(() => {
          for (const part of open.values()) part.span.end(now, Exit.isSuccess(exit) ? Exit.void : exit)
          open.clear()
        })
      )
    )
    return {
      start: (part, key) =>
        Effect.gen(function* () {
          if (open.has(part)) return
          const span = yield* Effect.makeSpan("Upload.part", {
            attributes: { "rivet.export": exportName, "rivet.part.key": key, "rivet.part.index": part },
            ...perPart
          })
          open.set(part, { span, startedAt: yield* Clock.currentTimeMillis, retries: 0 })
        }),
      within: (part) => (effect) => {
        const current = open.get(part)
        return current ? Effect.withParentSpan(effect, current.span) : effect
      },
      retried: (part) =>
        Effect.sync(() => {
          const current = open.get(part)
          if (current) current.retries++
        }),
      committed: (part, record) =>
        Effect.gen(function* () {
          const current = open.get(part)
          if (current === undefined) return
          open.delete(part)
          const now = yield* Clock.currentTimeMillis
          current.span.attribute("rivet.part.rows", record.rows)
          current.span.attribute("rivet.part.bytes", record.size_bytes)
          current.span.attribute("rivet.retries", current.retries)
          current.span.end(yield* Clock.currentTimeNanos, Exit.void)
          yield* Metric.update(partUploadDuration, (now - current.startedAt) / 1000).pipe(
            Effect.tagMetrics("export", exportName)
          )
        })
    }
  })

export interface PartSpans {
  /** Opens the part's span (once) as its first block goes out. */
  readonly start: (part: number, key: string) => Effect.Effect<void>
  /** Runs a sink call for the part as a child of its span. */
  readonly within: (part: number) => <A, E, R>(effect: Effect.Effect<A, E, R>) => Effect.Effect<A, E, R>
  readonly retried: (part: number) => Effect.Effect<void>
  /** Ends the part's span with what it holds, and records how long its upload took. */
  readonly committed: (part: number, record: PartRecord) => Effect.Effect<void>
}
