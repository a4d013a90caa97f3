import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Tracer from "effect/Tracer"

// What a collector is told about a failure. Database error texts quote data (PostgreSQL's `invalid input syntax
// for type integer: "…"`, a unique violation's key, MySQL's "Duplicate entry '…'"), and so do Rivet's own
// messages about a value it cannot decode or encode: the user who ran the command sees all of it, telemetry gets
// the error's class, the server's error code and Rivet's own wording with the quoted part withheld. Every span
// ends through `redactingTracer`, so this holds for `Effect.fn` and `withSpan` spans alike, in worker threads too.

/** What stands in a message sent to telemetry for the text it quoted from the database. */
export const WITHHELD = "[withheld from telemetry]"

interface Described {
  readonly kind: string
  readonly message: string
  /** The server's error code (SQLSTATE, MySQL error number). */
  readonly code?: string | undefined
}

const field = (value: object, name: string): unknown => (name in value ? (value as Record<string, unknown>)[name] : undefined)
const text = (value: object, name: string): string | undefined => {
  const found = field(value, name)
  return typeof found === "string" && found !== "" ? found : undefined
}

/** The pieces of text an error's message quotes from the database (its `quoted`), longest first. */
const quotesOf = (value: unknown): ReadonlyArray<string> => {
  const found = typeof value === "object" && value !== null ? field(value, "quoted") : undefined
  const quotes = Array.isArray(found) ? found.filter((quote): quote is string => typeof quote === "string" && quote !== "") : []
  return quotes.sort((a, b) => b.length - a.length)
}

/** A message with the text it quotes from the database withheld; all of it when a quote cannot be found in it. */
const withheld = (message: string, quotes: ReadonlyArray<string>): string =>
  quotes.every((quote) => message.includes(quote))
    ? quotes.reduce((redacted, quote) => redacted.split(quote).join(WITHHELD), message)
    : `the message quotes the database ${WITHHELD}`

/** A failure (a tagged error) or a defect (something thrown), as telemetry may see it. */
export const describeForTelemetry = (failure: unknown, defect: boolean): Described => {
  const tag = typeof failure === "object" && failure !== null ? text(failure, "_tag") : undefined
  if (defect || tag === undefined || typeof failure !== "object" || failure === null) {
    // Something thrown that no one mapped: a driver's error among them, so its text is not trusted.
    const kind = failure instanceof Error ? failure.name : typeof failure
    return { kind, message: `an unexpected ${kind}: its message is ${WITHHELD}` }
  }
  const message = text(failure, "message") ?? ""
  if (tag === "PluginError" && field(failure, "detail") !== undefined) {
    // A PluginError with a stack was made from a defect and quotes its message.
    return { kind: tag, message: `plugin "${text(failure, "plugin") ?? "?"}" failed unexpectedly: its message is ${WITHHELD}` }
  }
  return { kind: tag, message: withheld(message, quotesOf(failure)), code: text(failure, "code") }
}

/** The stack frames of an error (code locations only): its first lines, which repeat the message, are dropped. */
const framesOf = (failure: unknown): string => {
  if (!(failure instanceof Error) || typeof failure.stack !== "string" || /[\r\n]/.test(failure.message)) return ""
  const quotes = quotesOf(failure)
  return failure.stack
    .split("\n")
    .filter((line) => /^\s+at /.test(line) && !quotes.some((quote) => line.includes(quote)))
    .map((line) => `\n${line}`)
    .join("")
}

// Where Effect keeps the span a failure happened in: Cause.pretty adds it to the stack as "at <span name>".
const SPAN = Symbol.for("effect/SpanAnnotation")

/** What a span's exception event and status message carry instead of the failure itself. */
export class TelemetryFailure extends Error {
  constructor(described: Described, failure: unknown) {
    super(described.message)
    this.name = described.kind
    this.stack = `${described.kind}: ${described.message}${framesOf(failure)}`
    if (typeof failure === "object" && failure !== null && SPAN in failure) {
      Object.defineProperty(this, SPAN, { value: (failure as Record<symbol, unknown>)[SPAN], enumerable: false })
    }
  }
}

/** The same cause, its failures and defects replaced by what telemetry may see of them; interruptions kept. */
export const redactCause = (cause: Cause.Cause<unknown>): Cause.Cause<TelemetryFailure> =>
  Cause.match(cause, {
    onEmpty: Cause.empty,
    onFail: (error) => Cause.fail(new TelemetryFailure(describeForTelemetry(error, false), error)),
    onDie: (defect) => Cause.die(new TelemetryFailure(describeForTelemetry(defect, true), defect)),
    onInterrupt: Cause.interrupt,
    onSequential: Cause.sequential,
    onParallel: Cause.parallel
  })

const firstFailure = (cause: Cause.Cause<unknown>): Described | undefined => {
  const failure = Cause.failureOption(cause)
  if (failure._tag === "Some") return describeForTelemetry(failure.value, false)
  const defect = Cause.dieOption(cause)
  return defect._tag === "Some" ? describeForTelemetry(defect.value, true) : undefined
}

/** An attribute's value, unless it is a failure: then what telemetry may see of it. */
const attributeValue = (value: unknown): unknown => {
  if (Cause.isCause(value)) return firstFailure(value)?.message ?? ""
  if (value instanceof Error) return describeForTelemetry(value, !("_tag" in value)).message
  return value
}

/** A log line's level and fiber; not its annotations, nor the cause it logged. */
const logAttributes = (attributes: Record<string, unknown> | undefined): Record<string, unknown> => ({
  "effect.logLevel": attributes?.["effect.logLevel"],
  "effect.fiberId": attributes?.["effect.fiberId"],
  ...(attributes !== undefined && "effect.cause" in attributes ? { "effect.cause": WITHHELD } : {})
})

/** A span whose end, events and attributes go to the span it wraps with nothing quoted from the database. */
const redactingSpan = (span: Tracer.Span): Tracer.Span =>
  new Proxy(span, {
    get: (target, property, receiver) => {
      if (property === "end") {
        return (endTime: bigint, exit: Exit.Exit<unknown, unknown>) => {
          if (Exit.isFailure(exit)) {
            const described = firstFailure(exit.cause)
            if (described !== undefined) {
              target.attribute("error.type", described.kind)
              if (described.code !== undefined) target.attribute("db.response.status_code", described.code)
            }
            return target.end(endTime, Exit.failCause(redactCause(exit.cause)))
          }
          return target.end(endTime, exit)
        }
      }
      if (property === "event") {
        // Effect turns log lines into span events, their text already joined from whatever was logged (an error
        // among it) and a cause pretty-printed: neither can be taken apart any more, so neither leaves.
        return (_name: string, startTime: bigint, attributes?: Record<string, unknown>) =>
          target.event(`log line ${WITHHELD}`, startTime, logAttributes(attributes))
      }
      if (property === "attribute") return (key: string, value: unknown) => target.attribute(key, attributeValue(value))
      return Reflect.get(target, property, receiver) as unknown
    }
  })

/** The tracer in place, each of its spans told of failures only what telemetry may see. */
export const redactingTracer = (inner: Tracer.Tracer): Tracer.Tracer =>
  Tracer.make({
    span: (name, parent, context, links, startTime, kind, options) =>
      redactingSpan(inner.span(name, parent, context, links, startTime, kind, options)),
    context: (f, fiber) => inner.context(f, fiber)
  })

/** Wraps the tracer in place (an exporter's, set by a layer built before this one) in `redactingTracer`. */
export const redactingTracerLayer: Layer.Layer<never> = Layer.unwrapEffect(
  Effect.map(Effect.tracer, (inner) => Layer.setTracer(redactingTracer(inner)))
)
