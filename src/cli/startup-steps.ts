import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"

/**
 * The steps before an export's first row that can be slow, by the span the plugin or the engine opens for them. The
 * terminal view shows the label with a spinner while the span is open (once it has been for a moment); the plugins
 * need not know a terminal exists.
 */
export const STARTUP_STEPS: Readonly<Record<string, string>> = {
  "EmbeddedPostgres.start": "starting the embedded PostgreSQL…",
  "EmbeddedPostgres.seedDemo": "seeding the demo data (first run only)…",
  "PostgresSource.check": "connecting to PostgreSQL…",
  "MysqlSource.check": "connecting to MySQL…",
  "Lease.acquire": "taking the export's lease…",
  "PostgresSource.describe": "reading the query's columns…",
  "MysqlSource.describe": "reading the query's columns…",
  "PostgresSource.estimateRows": "estimating the rows…",
  "MysqlSource.estimateRows": "estimating the rows…",
  "PostgresSource.bounds": "reading the chunk column's range…",
  "MysqlSource.bounds": "reading the chunk column's range…"
}

/** A step's span while it is open; the view drops it once the span's status says it ended. */
export interface OpenStep {
  readonly label: string
  readonly span: Tracer.Span
}

/**
 * Sets a tracer that hands every span named in STARTUP_STEPS to `onStart`, then delegates everything to the tracer
 * in place (Effect's own, or an exporter's), so spans, their parents and their export are unchanged.
 */
export const observeStartupSteps = (onStart: (step: OpenStep) => void): Layer.Layer<never> =>
  Layer.unwrapEffect(
    Effect.map(Effect.tracer, (inner) =>
      Layer.setTracer(
        Tracer.make({
          span: (name, parent, context, links, startTime, kind, options) => {
            const span = inner.span(name, parent, context, links, startTime, kind, options)
            const label = STARTUP_STEPS[name]
            if (label !== undefined) onStart({ label, span })
            return span
          },
          context: (f, fiber) => inner.context(f, fiber)
        })
      )
    )
  )

export const isOpen = (step: OpenStep): boolean => step.span.status._tag === "Started"
