import * as NodeSdk from "@effect/opentelemetry/NodeSdk"
import { InMemorySpanExporter, type ReadableSpan, SimpleSpanProcessor } from "@opentelemetry/sdk-trace-base"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Layer from "effect/Layer"
import * as Logger from "effect/Logger"
import { describe, expect, it } from "vitest"
import { FormatError, PluginError, SinkError, SourceError } from "../../../src/core/errors.js"
import { redactingTracerLayer, WITHHELD } from "../../../src/engine/telemetry/redact.js"

// The tracer telemetry uses, over the real OpenTelemetry SDK with an in-memory exporter: every way a failure reaches
// a span (an `Effect.fn` span's failure, a defect, a cause chain, a logged cause, an attribute) leaves the span
// without the text quoted from the database, and with the failure's class and code.

const CANARY = "CANARY-value-4711"

/** Runs `effect` under the redacting tracer and returns every span the SDK finished. */
const finishedSpans = async (effect: Effect.Effect<unknown, unknown>): Promise<ReadonlyArray<ReadableSpan>> => {
  const exporter = new InMemorySpanExporter()
  const sdk = NodeSdk.layer(() => ({ resource: { serviceName: "redaction" }, spanProcessor: new SimpleSpanProcessor(exporter) }))
  // Read before the layer closes: the SDK's shutdown empties the in-memory exporter.
  const spans = Effect.zipRight(Effect.exit(effect), Effect.sync(() => [...exporter.getFinishedSpans()]))
  return Effect.runPromise(spans.pipe(Effect.provide(Layer.provide(redactingTracerLayer, sdk))))
}

/** Everything a span would send: name, attributes, status and events with theirs. */
const sent = (span: ReadableSpan) =>
  JSON.stringify({ name: span.name, attributes: span.attributes, status: span.status, events: span.events })

const exceptionOf = (span: ReadableSpan) => span.events.find((event) => event.name === "exception")?.attributes ?? {}

const serverFailure = new SourceError({
  source: "postgres",
  message: `export "orders": PostgreSQL error 22P02 while reading rows: invalid input syntax for type integer: "${CANARY}"`,
  retryable: false,
  code: "22P02",
  quoted: [`invalid input syntax for type integer: "${CANARY}"`]
})

describe("the redacting tracer", () => {
  it("an Effect.fn span that fails: class, code and Rivet's wording, the quote withheld from status and exception", async () => {
    const read = Effect.fn("Source.read")(function* () {
      return yield* new SourceError(fieldsOf(serverFailure))
    })
    const [span] = await finishedSpans(read())
    expect(span?.status).toEqual({ code: 2, message: `export "orders": PostgreSQL error 22P02 while reading rows: ${WITHHELD}` })
    expect(span?.attributes).toMatchObject({ "error.type": "SourceError", "db.response.status_code": "22P02" })
    const exception = exceptionOf(span!)
    expect(exception["exception.type"]).toBe("SourceError")
    expect(exception["exception.message"]).toBe(span?.status.message)
    // The stack keeps its code locations (the span's too), never the message's quote.
    expect(String(exception["exception.stacktrace"])).toMatch(/^SourceError: export "orders": PostgreSQL error 22P02 .*\n\s+at /)
    expect(String(exception["exception.stacktrace"])).toContain("at Source.read")
    expect(sent(span!)).not.toContain(CANARY)
  })

  it("a chunk's message withholds its key range and the server's text; a quote not found withholds the whole message", async () => {
    const reworded = new SourceError({
      ...fieldsOf(serverFailure),
      message: `chunk 3 (id ${CANARY}..${CANARY}z): ${serverFailure.message}`,
      quoted: [`id ${CANARY}..${CANARY}z`, ...serverFailure.quoted!]
    })
    const [first] = await finishedSpans(Effect.withSpan(Effect.fail(reworded), "Chunk"))
    expect(first?.status.message).toBe(`chunk 3 (${WITHHELD}): export "orders": PostgreSQL error 22P02 while reading rows: ${WITHHELD}`)
    expect(sent(first!)).not.toContain(CANARY)
    const mangled = new SourceError({ ...fieldsOf(serverFailure), message: serverFailure.message.toUpperCase() })
    const [second] = await finishedSpans(Effect.withSpan(Effect.fail(mangled), "Mangled"))
    expect(second?.status.message).toBe(`the message quotes the database ${WITHHELD}`)
    expect(sent(second!).toUpperCase()).not.toContain(CANARY.toUpperCase())
  })

  it("a value an encoder or a transform could not take is withheld like the server's text", async () => {
    const spans = await finishedSpans(
      Effect.forEach(
        [
          Effect.withSpan(
            Effect.fail(
              new FormatError({
                format: "parquet",
                message: `column "total", row 3 of the part: expected decimal text such as -12.30, got "${CANARY}"`,
                quoted: [`expected decimal text such as -12.30, got "${CANARY}"`]
              })
            ),
            "Encode"
          ),
          Effect.withSpan(
            Effect.fail(
              new PluginError({
                plugin: "mapRows",
                message: `a mapRows transform returned a value of the wrong type: expected a bigint, got "${CANARY}"`,
                quoted: [`expected a bigint, got "${CANARY}"`]
              })
            ),
            "Transform"
          )
        ],
        (failing: Effect.Effect<never, unknown>) => Effect.exit(failing)
      )
    )
    expect(spans.map((span) => [span.name, span.status.message])).toEqual([
      ["Encode", `column "total", row 3 of the part: ${WITHHELD}`],
      ["Transform", `a mapRows transform returned a value of the wrong type: ${WITHHELD}`]
    ])
    for (const span of spans) expect(sent(span)).not.toContain(CANARY)
  })

  it("defects, a PluginError made from one, and an error's cause chain: none of their text leaves", async () => {
    const spans = await finishedSpans(
      Effect.forEach(
        [
          Effect.withSpan(Effect.die(new TypeError(`driver choked on ${CANARY}`)), "Defect"),
          Effect.withSpan(
            Effect.fail(new PluginError({ plugin: "custom", message: `export 'x' failed unexpectedly: ${CANARY}`, detail: `Error: ${CANARY}\n    at x` })),
            "Plugin"
          ),
          Effect.withSpan(
            Effect.fail(
              new SinkError({
                plugin: "s3",
                operation: "put",
                reason: "Unknown",
                message: "S3 put failed",
                retryable: false,
                cause: new Error(`the store echoed ${CANARY}`, { cause: new Error(CANARY) })
              })
            ),
            "Sink"
          )
        ],
        (failing: Effect.Effect<never, unknown>) => Effect.exit(failing)
      )
    )
    const byName = new Map(spans.map((span) => [span.name, span]))
    expect(byName.get("Defect")?.status).toEqual({ code: 2, message: `an unexpected TypeError: its message is ${WITHHELD}` })
    expect(exceptionOf(byName.get("Defect")!)["exception.type"]).toBe("TypeError")
    expect(byName.get("Plugin")?.status.message).toBe(`plugin "custom" failed unexpectedly: its message is ${WITHHELD}`)
    expect(byName.get("Sink")?.status.message).toBe("S3 put failed")
    expect(byName.get("Sink")?.attributes["error.type"]).toBe("SinkError")
    expect(spans).toHaveLength(3)
    for (const span of spans) expect(sent(span)).not.toContain(CANARY)
  })

  it("a logged cause and an attribute holding an error are withheld; plain attributes and interruptions pass", async () => {
    const spans = await finishedSpans(
      Effect.gen(function* () {
        yield* Effect.logError("a unit failed", Cause.fail(serverFailure))
        yield* Effect.logWarning("retrying after", serverFailure)
        yield* Effect.annotateCurrentSpan({ "rivet.rows": 3, "rivet.last_error": serverFailure })
        const sleeping = yield* Effect.fork(Effect.withSpan(Effect.never, "Interrupted"))
        yield* Effect.sleep("10 millis")
        yield* Fiber.interrupt(sleeping)
      }).pipe(Effect.withSpan("Logged"), Effect.provide(Logger.remove(Logger.defaultLogger)))
    )
    const logged = spans.find((span) => span.name === "Logged")!
    expect(logged.events.map((event) => [event.name, event.attributes?.["effect.logLevel"], event.attributes?.["effect.cause"]])).toEqual([
      [`log line ${WITHHELD}`, "ERROR", WITHHELD],
      [`log line ${WITHHELD}`, "WARN", undefined]
    ])
    expect(logged.attributes["rivet.rows"]).toBe(3)
    expect(logged.attributes["rivet.last_error"]).toBe(`export "orders": PostgreSQL error 22P02 while reading rows: ${WITHHELD}`)
    expect(logged.status.code).toBe(1)
    expect(spans.find((span) => span.name === "Interrupted")?.attributes["status.interrupted"]).toBe(true)
    for (const span of spans) expect(sent(span)).not.toContain(CANARY)
  })
})

const fieldsOf = (error: SourceError) => ({
  source: error.source,
  message: error.message,
  retryable: error.retryable,
  code: error.code,
  quoted: error.quoted
})
