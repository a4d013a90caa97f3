import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Ref from "effect/Ref"
import * as Schedule from "effect/Schedule"
import { createLogUpdate } from "log-update"
import { ProgressReporter, type ExportOutcome, type ExportProgress } from "../core/progress.js"
import { addSample, exportLine, finishedLine, fitWidth, stepLine, type Lane } from "./live-lines.js"
import { renderSummary } from "./render.js"
import { renderRunSummary } from "./run-summary.js"
import { isOpen, observeStartupSteps, type OpenStep } from "./startup-steps.js"
import { printLines } from "./terminal.js"

/** What the terminal shows while `rivet run` runs: a line per running export, a spinner per slow start-up step. */
interface View {
  readonly lanes: ReadonlyMap<string, Lane>
  readonly steps: ReadonlyArray<OpenStep & { readonly since: number }>
  readonly outcomes: ReadonlyArray<ExportOutcome>
}

// A notice can carry a server's message: its control bytes (an escape sequence) must not reach the terminal.
// eslint-disable-next-line no-control-regex
const CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f]/g

const REDRAW_MS = 100
/** A step shorter than this never shows: a spinner that flashes for 20 ms is noise. */
const STEP_DELAY_MS = 250

const frameOf = (view: View, now: number, columns: number): string =>
  [
    ...view.steps.filter((step) => now - step.since >= STEP_DELAY_MS).map((step) => stepLine(step, now)),
    ...[...view.lanes.values()].map((lane) => exportLine(lane, now)),
    ...(view.outcomes.length > 0 ? [finishedLine(view.outcomes, columns)] : [])
  ]
    .map((line) => fitWidth(line, columns))
    .join("\n")

/**
 * The terminal reporter of `rivet run` (stderr is a terminal): the live lines are redrawn in place by log-update,
 * notices are written above them, and when the run ends one table sums up every export (`verbose`: the block per
 * export as it finishes, and no table). The cursor stays visible: hiding it would make log-update install exit
 * hooks (signal-exit) that end the process on Ctrl-C before the run's cleanup has aborted its uploads.
 */
export const liveProgress = (options: { readonly verbose: boolean }): Layer.Layer<ProgressReporter> =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const startedAt = Date.now()
      const view = yield* Ref.make<View>({ lanes: new Map(), steps: [], outcomes: [] })
      const frame = createLogUpdate(process.stderr, { showCursor: true })
      const columns = () => process.stderr.columns ?? 80
      const draw = Effect.flatMap(Ref.updateAndGet(view, (current) => ({ ...current, steps: current.steps.filter(isOpen) })), (current) =>
        Effect.sync(() => {
          const text = frameOf(current, Date.now(), columns())
          if (text === "") frame.clear()
          else frame(text)
        })
      )
      /** Text that stays (a notice, a finished export's block) goes above the live lines, which are drawn again. */
      const above = (text: string) => Effect.zipRight(Effect.sync(() => frame.persist(text.replace(CONTROL, ""))), draw)
      yield* Effect.addFinalizer(() =>
        Effect.gen(function* () {
          yield* Effect.sync(() => frame.clear())
          const { outcomes } = yield* Ref.get(view)
          if (!options.verbose && outcomes.length > 0) yield* printLines("stderr", `${renderRunSummary(outcomes, Date.now() - startedAt)}\n`)
        })
      )
      // Forked after the finalizer above, so it is interrupted before that finalizer clears the frame.
      yield* Effect.forkScoped(Effect.repeat(draw, Schedule.spaced(REDRAW_MS)))

      const see = (progress: ExportProgress) =>
        Ref.update(view, (current) => {
          const lane = current.lanes.get(progress.exportName)
          const samples = addSample(lane?.samples ?? [], { at: Date.now(), rows: progress.rows })
          return { ...current, lanes: new Map(current.lanes).set(progress.exportName, { progress, samples }) }
        })
      const reporter = Layer.succeed(ProgressReporter, {
        intervalMs: 250,
        started: (progress) => Effect.zipRight(see(progress), draw),
        tick: see,
        finished: (outcome) =>
          Effect.zipRight(
            Ref.update(view, (current) => {
              const lanes = new Map(current.lanes)
              lanes.delete(outcome.exportName)
              return { ...current, lanes, outcomes: [...current.outcomes, outcome] }
            }),
            options.verbose ? above(renderSummary(outcome)) : draw
          ),
        notice: (exportName, message) => above(`rivet: export '${exportName}': ${message}`)
      })
      // A tracer opens spans synchronously: the step is recorded with runSync (a Ref update, nothing that waits).
      const steps = observeStartupSteps((step) =>
        Ref.update(view, (current) => ({ ...current, steps: [...current.steps, { ...step, since: Date.now() }] })).pipe(Effect.runSync)
      )
      return Layer.merge(reporter, steps)
    })
  )
