import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import { describeCause, SinkError } from "../../../core/errors.js"
import { SinkDriver } from "../../../core/plugin.js"
import type { SinkDriverShape } from "../../../core/plugin.js"
import * as Sink from "../../../core/sink/index.js"

/** Blocks of 64 KiB: the size of a pipe buffer on Linux, so each block is about one write to the reader. */
export const STDOUT_BLOCK_SIZE = 64 * 1024

const PLUGIN = "stdout"

const CLOSED_CODES = new Set(["EPIPE", "ECONNRESET", "ERR_STREAM_DESTROYED", "ERR_STREAM_WRITE_AFTER_END"])

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string"
    ? cause.code
    : undefined

const closedError = (operation: string, key: string | undefined): SinkError =>
  new SinkError({
    plugin: PLUGIN,
    operation,
    ...(key === undefined ? {} : { key }),
    reason: "Unavailable",
    retryable: false,
    message: "stdout was closed by the reader",
    hint: "the program reading rivet's output (for example `head`) exited before the export finished, so the output is incomplete"
  })

const writeError = (operation: string, key: string | undefined, cause: unknown): SinkError => {
  const code = codeOf(cause)
  if (code !== undefined && CLOSED_CODES.has(code)) return closedError(operation, key)
  return new SinkError({
    plugin: PLUGIN,
    operation,
    ...(key === undefined ? {} : { key }),
    reason: "Unknown",
    retryable: false,
    message: `cannot write to stdout: ${describeCause(cause)}`,
    cause
  })
}

/**
 * The stdout sink: bytes go to `stream` in the order they are written, waiting for `'drain'` whenever the
 * stream's buffer is full. A stream can never take bytes back, so `abort` does nothing and blocks must come
 * in order (the capabilities ask for one at a time). The first write error — usually EPIPE when the reader
 * exits — is kept and returned by every later operation.
 *
 * `stream` is a parameter for tests; the plugin always uses `process.stdout`.
 */
export const makeStdoutDriver = (
  stream: NodeJS.WritableStream = process.stdout
): Effect.Effect<SinkDriverShape, never, Scope.Scope> =>
  Effect.gen(function* () {
    let failure: SinkError | undefined
    let inFlight = 0
    const idleWaiters = new Set<() => void>()

    const fail = (operation: string, key: string | undefined, cause: unknown): SinkError => {
      failure ??= writeError(operation, key, cause)
      return failure
    }
    const wakeIdle = () => {
      for (const wake of [...idleWaiters]) wake()
    }

    // Without a listener an EPIPE on process.stdout is an uncaught exception that kills the process.
    const onError = (cause: unknown) => {
      fail("write", undefined, cause)
      wakeIdle()
    }
    yield* Effect.acquireRelease(
      Effect.sync(() => stream.on("error", onError)),
      () =>
        Effect.sync(() => {
          stream.removeListener("error", onError)
          // Writes still in flight (after an abort) may fail later; swallow that instead of crashing.
          if (inFlight > 0) stream.on("error", () => undefined)
        })
    )

    /** Hands `bytes` to the stream; resumes at once, or after `'drain'` when the stream's buffer is full. */
    const write = (bytes: Uint8Array, operation: string, key: string): Effect.Effect<void, SinkError> =>
      Effect.async<void, SinkError>((resume) => {
        if (failure !== undefined) return resume(Effect.fail(failure))
        if (bytes.length === 0) return resume(Effect.void)
        let waiting = true
        const stopWaiting = () => {
          waiting = false
          stream.removeListener("drain", onDrain)
          stream.removeListener("close", onClose)
        }
        const settle = (result: Effect.Effect<void, SinkError>) => {
          if (!waiting) return
          stopWaiting()
          resume(result)
        }
        const onDrain = () => settle(Effect.void)
        const onClose = () => settle(Effect.fail(failure ?? fail(operation, key, { code: "ERR_STREAM_DESTROYED" })))
        inFlight++
        const accepted = stream.write(bytes, (cause) => {
          inFlight--
          if (cause) settle(Effect.fail(fail(operation, key, cause)))
          if (inFlight === 0 || cause) wakeIdle()
        })
        if (accepted) {
          settle(Effect.void)
        } else if (waiting) {
          stream.on("drain", onDrain)
          stream.on("close", onClose)
        }
        return Effect.sync(stopWaiting)
      })

    /** Waits until every write so far has reached the stream's destination, and reports any failure. */
    const flushed = (operation: string, key: string): Effect.Effect<void, SinkError> =>
      Effect.async<void, SinkError>((resume) => {
        const finish = () => {
          idleWaiters.delete(finish)
          resume(failure === undefined ? Effect.void : Effect.fail(failure))
        }
        if (inFlight === 0 || failure !== undefined) return finish()
        idleWaiters.add(finish)
        return Effect.sync(() => idleWaiters.delete(finish))
      }).pipe(Effect.withSpan("StdoutSink.flush", { attributes: { operation, key } }))

    return Sink.make({
      spanPrefix: "StdoutSink",
      label: "Stdout",
      uri: () => "stdout:",
      capabilities: { markers: false, blockSize: STDOUT_BLOCK_SIZE, concurrency: 1 },
      usageError: Sink.usageErrors(PLUGIN, (problem) => ({ ...problem, message: `stdout: ${problem.message}` })),
      // A stream can never take bytes back: blocks go out in order, and abort has nothing to remove.
      uploads: { inOrder: true },
      check: Effect.suspend(() => (failure === undefined ? Effect.void : Effect.fail(failure))),
      probe: false,
      put: (key, bytes) => write(bytes, "put", key).pipe(Effect.zipRight(flushed("put", key))),
      begin: (key) =>
        Effect.succeed({
          writePart: (_index: number, bytes: Uint8Array) => write(bytes, "writeBlock", key),
          complete: () => flushed("complete", key),
          abort: Effect.void
        })
    })
  })

/** The `stdout` sink as a layer over `process.stdout` (or another stream, in tests). */
export const stdoutLayer = (stream?: NodeJS.WritableStream): Layer.Layer<SinkDriver, SinkError> =>
  Layer.scoped(SinkDriver, makeStdoutDriver(stream))
