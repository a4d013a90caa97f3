import * as Console from "effect/Console"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { ProgressReporter } from "../core/progress.js"
import { formatDuration } from "./render.js"

/**
 * The signal that interrupted the CLI. `NodeRuntime.runMain` turns SIGINT and SIGTERM into an interruption of the
 * main fiber but does not say which one arrived; the exit code does (128 + the signal's number, as a shell reports a
 * process killed by it), so cron and orchestrators can tell a Ctrl-C from a stop request.
 */
let received: "SIGINT" | "SIGTERM" | undefined

/**
 * Records the first SIGINT or SIGTERM. The listeners remove themselves on the first signal, as runMain's do: a
 * second signal then has no listener left and ends the process at once (the escape hatch if cleanup hangs).
 */
export const recordSignals = (): void => {
  const onSignal = (signal: "SIGINT" | "SIGTERM") => () => {
    received ??= signal
    process.removeListener("SIGINT", onInt)
    process.removeListener("SIGTERM", onTerm)
  }
  const onInt = onSignal("SIGINT")
  const onTerm = onSignal("SIGTERM")
  process.on("SIGINT", onInt)
  process.on("SIGTERM", onTerm)
}

/**
 * For runs that keep reading (`--follow`): the first SIGINT or SIGTERM asks them to stop gracefully (each export
 * publishes the window it is reading, and the CLI exits 0) instead of interrupting; the listeners that were there
 * (runMain's interruption) come back for a second signal.
 */
export const gracefulStop = (onStop: (signal: "SIGINT" | "SIGTERM") => void): AbortSignal => {
  const controller = new AbortController()
  const saved = { SIGINT: process.listeners("SIGINT"), SIGTERM: process.listeners("SIGTERM") }
  const restore = () => {
    for (const name of ["SIGINT", "SIGTERM"] as const) {
      process.removeAllListeners(name)
      for (const listener of saved[name]) process.on(name, listener as () => void)
    }
  }
  const onSignal = (signal: "SIGINT" | "SIGTERM") => () => {
    restore()
    onStop(signal)
    controller.abort()
  }
  for (const name of ["SIGINT", "SIGTERM"] as const) {
    process.removeAllListeners(name)
    process.on(name, onSignal(name))
  }
  return controller.signal
}

/** 130 after SIGINT (and an interruption without a signal), 143 after SIGTERM. */
export const interruptedExitCode = (): number => (received === "SIGTERM" ? 143 : 130)

/** The exports that started and have not finished, as the reporter saw them. */
export interface RunningExports {
  readonly layer: Layer.Layer<ProgressReporter>
  readonly names: () => ReadonlyArray<string>
}

/** Wraps a reporter layer to know which exports are running when the run is interrupted. */
export const trackRunning = (reporter: Layer.Layer<ProgressReporter>): RunningExports => {
  const running = new Set<string>()
  const layer = Layer.map(reporter, (context) => {
    const inner = Context.get(context, ProgressReporter)
    return Context.make(ProgressReporter, {
      ...inner,
      started: (progress) => Effect.zipRight(Effect.sync(() => running.add(progress.exportName)), inner.started(progress)),
      finished: (outcome) => Effect.zipRight(Effect.sync(() => running.delete(outcome.exportName)), inner.finished(outcome))
    })
  })
  return { layer, names: () => [...running] }
}

/**
 * What the run says once a signal's interruption has been cleaned up (statements cancelled, sessions closed,
 * uploads aborted, temp files removed): an `interrupted` event with `--json`, else one summary line.
 */
export const reportInterrupted = (options: { readonly json: boolean; readonly exports: ReadonlyArray<string>; readonly startedAt: number }) =>
  Effect.suspend(() => {
    const exitCode = interruptedExitCode()
    const signal = received ?? null
    const durationMs = Date.now() - options.startedAt
    const message =
      options.exports.length === 0
        ? "no export was running"
        : `${options.exports.map((name) => `'${name}'`).join(", ")} stopped: running statements cancelled, uploads aborted, nothing of ${options.exports.length === 1 ? "it" : "them"} published`
    return Console.error(
      options.json
        ? JSON.stringify({ event: "interrupted", time: new Date().toISOString(), signal, exports: options.exports, duration_ms: durationMs, message, exit_code: exitCode })
        : `rivet: interrupted by ${signal ?? "an interrupt"} after ${formatDuration(durationMs)}: ${message} (exit ${exitCode})`
    )
  })
