import * as Cause from "effect/Cause"
import * as Clock from "effect/Clock"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import type { ExportConfig, RivetConfig } from "../config/model.js"
import type { StateStore } from "../state/store.js"
import { guardedPluginError } from "./plugin-guard.js"
import { ConfigError, defectDetail, describeCause, PluginError, type RivetError, type StateError } from "../core/errors.js"
import { laneSettings } from "./lanes/runner.js"
import { leaseTtlFrom } from "./lease.js"
import { resolveMaskKey } from "./masking.js"
import { exportLayer, sourceLayer } from "./layers.js"
import type { ModePlan } from "./plan/model.js"
import { type BatchTransform, type SharedReader, SourceDriver } from "../core/plugin.js"
import { type ExportNotice, notifyExport } from "./notify.js"
import { type ExportResult, runExport } from "./pipeline.js"
import type { RunOptions } from "./run/run-options.js"
import { ProgressReporter } from "../core/progress.js"
import type { RetryPolicy } from "../core/retry.js"

export { exportLayer } from "./layers.js"

export interface RunConfigOptions {
  /** Run only these exports (by name), in config order. */
  readonly only?: ReadonlyArray<string> | undefined
  readonly env?: Readonly<Record<string, string | undefined>>
  readonly retry?: RetryPolicy
  /** Continue unfinished checkpointed runs (`rivet run --resume`). */
  readonly resume?: boolean | undefined
  /**
   * How long an export waits, in milliseconds, for another run of it (holding its lease) to finish before it
   * fails (`rivet run --wait`). Default 0: fail at once, naming the other run.
   */
  readonly waitMs?: number | undefined
  /** Transforms given in code, by export name, applied between the source and the format. */
  readonly transforms?: Readonly<Record<string, BatchTransform>> | undefined
  /**
   * Where state lives: chosen at the edge (the CLI and `runExports` take `RIVET_STATE_URL`, else
   * `.rivet_state.db` beside the config: `stateLayerFor`).
   */
  readonly state: Layer.Layer<StateStore, StateError>
  /**
   * Planned exports by name (`rivet run --plan`, checked with `plannedExports`): each runs exactly its plan, and
   * is refused when its config or stored cursor moved since.
   */
  readonly plans?: ReadonlyMap<string, ModePlan> | undefined
  /** `rivet run --worker --run-id <id>`: join that distributed run (chunked exports, PostgreSQL state). */
  readonly workerRunId?: string | undefined
  /**
   * `rivet run --follow`: exports that can read continuously (cdc) run one window after another until `stop` aborts;
   * the others run once first. Exports whose config asks for it (cdc `until_current: false`) do so without it.
   */
  readonly follow?: boolean | undefined
  /** Ends continuous exports gracefully: each publishes the window it is reading, then stops. */
  readonly stop?: AbortSignal | undefined
  /**
   * The entry module of chunk worker threads (`LANES_WORKER_URL`); without it every chunk runs in this thread.
   */
  readonly lanesWorker?: URL | undefined
  /**
   * `false`: every part is encoded on the thread reading the source (`rivet run --no-encoder-thread`). Default: an
   * export whose format can encode on a thread of its own does so when the engine finds it worth it
   * (engine/encoder-thread/layer.ts).
   */
  readonly encoderThread?: boolean | undefined
}

export type ExportRun<E = never> =
  | { readonly _tag: "success"; readonly result: ExportResult }
  | { readonly _tag: "failure"; readonly exportName: string; readonly error: RivetError | E }

/** Picks the exports to run; an unknown name is a usage error listing the known ones. */
export const selectExports = (
  config: RivetConfig,
  only: ReadonlyArray<string> | undefined
): Effect.Effect<ReadonlyArray<ExportConfig>, ConfigError> => {
  if (!only || only.length === 0) return Effect.succeed(config.exports)
  const known = config.exports.map((spec) => spec.name)
  const unknown = only.find((name) => !known.includes(name))
  if (unknown !== undefined) {
    return Effect.fail(
      new ConfigError({
        path: "--export",
        message: `export '${unknown}' is not defined in ${config.origin}`,
        hint: `known exports: ${known.join(", ")}`
      })
    )
  }
  return Effect.succeed(config.exports.filter((spec) => only.includes(spec.name)))
}

/**
 * Runs the selected exports one after another with one shared source connection. A failing export
 * does not stop the others; each outcome is returned (and reported through the ProgressReporter).
 */
export const runConfig = Effect.fn("Rivet.runConfig")(function* (config: RivetConfig, options: RunConfigOptions) {
  const selected = yield* selectExports(config, options.only)
  if (options.follow === true && !selected.some((spec) => spec.mode.followable)) {
    return yield* new ConfigError({
      path: "--follow",
      message: "none of the selected exports can keep reading: --follow is for exports that read a change log (mode: cdc)",
      hint: "select cdc exports with -e, or run without --follow"
    })
  }
  const sharing = yield* sharingOf(config, selected)
  const reporter = yield* ProgressReporter
  // Without a source no export can run: fail once instead of once per export.
  const sourceContext = yield* Layer.build(sourceLayer(config, options.env))
  const stateContext = yield* Layer.build(options.state)
  yield* Effect.flatMap(SourceDriver, (source) => source.check).pipe(Effect.provide(sourceContext))
  const ttlMs = yield* leaseTtlFrom(options.env ?? process.env)
  const maskKey = yield* resolveMaskKey(config, options.env ?? process.env)
  const runOptions: RunOptions = {
    lease: { ttlMs, waitMs: options.waitMs ?? 0 },
    sourceType: config.source.plugin.type,
    sourceConfig: config.source.config,
    ...(options.retry ? { retry: options.retry } : {}),
    resume: options.resume ?? false,
    maskKey,
    lanes: yield* laneSettings(config, options.env ?? process.env, options.lanesWorker),
    ...(options.workerRunId === undefined ? {} : { worker: { runId: options.workerRunId, ttlMs } })
  }
  const runs: Array<ExportRun> = []
  // A webhook that fails is a notice beside the export's outcome, never the export's failure.
  const notify = (notice: ExportNotice) =>
    Effect.flatMap(notifyExport(config.notifications, options.env ?? process.env, notice), (problem) =>
      problem === undefined ? Effect.void : reporter.notice(notice.exportName, problem)
    )
  /** One run of one export, reported; an interruption (Ctrl-C) stops everything. */
  const runOnce = (spec: ExportConfig, follow: RunOptions["follow"], readers?: ReadonlyArray<SharedReader>) =>
    Effect.gen(function* () {
      const started = yield* Clock.currentTimeMillis
      const transform = options.transforms?.[spec.name]
      const plan = options.plans?.get(spec.name)
      const exportOptions = { ...runOptions, ...(plan ? { plan } : {}), ...(follow ? { follow } : {}), ...(readers ? { sharing: readers } : {}) }
      const exit = yield* runExport(transform ? { ...spec, transform } : spec, exportOptions).pipe(
        Effect.provide(exportLayer(config, spec, options.env, { encoderThread: options.encoderThread ?? true })),
        Effect.provide(sourceContext),
        Effect.provide(stateContext),
        Effect.exit
      )
      if (Exit.isSuccess(exit)) {
        const result = exit.value
        // A continuous export keeps only its latest window's result: it may run for days, a window a minute.
        const earlier = follow ? runs.findIndex((run) => run._tag === "success" && run.result.exportName === spec.name) : -1
        if (earlier >= 0) runs.splice(earlier, 1)
        runs.push({ _tag: "success", result })
        yield* notify({ exportName: spec.name, event: "success", rows: result.rows, files: result.parts.length })
        yield* reporter.finished({
          exportName: spec.name,
          runId: result.runId,
          // A worker whose run another worker published did its share successfully.
          status: result.status === "joined" ? "success" : result.status,
          mode: result.mode,
          untracked: result.untracked,
          rows: result.rows,
          files: result.parts.length,
          bytes: result.bytes,
          retries: result.retries,
          durationMs: result.durationMs,
          uri: result.uri
        })
        return true
      }
      // Only a pure interruption (Ctrl-C) stops the run: a failed layer build also carries the interruption of its
      // sibling layer's fiber, and must be reported as this export's error.
      if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
      const error = errorOf(exit.cause, spec)
      runs.push({ _tag: "failure", exportName: spec.name, error })
      yield* notify({ exportName: spec.name, event: "failure", rows: 0, files: 0, error: error.message })
      yield* reporter.finished({
        exportName: spec.name,
        runId: "",
        status: "failed",
        mode: spec.mode.kind,
        rows: 0,
        files: 0,
        bytes: 0,
        retries: 0,
        durationMs: (yield* Clock.currentTimeMillis) - started,
        uri: "",
        error: error.message
      })
      return false
    })
  const stop = options.stop ?? new AbortController().signal
  const continuous = (spec: ExportConfig) => spec.mode.followable && (options.follow === true || spec.mode.continuous)
  // One after another (`parallel_exports` at a time), exports reading a shared resource together, side by side.
  const ran = new Set<string>()
  const groups: Array<ReadonlyArray<ExportConfig>> = []
  for (const spec of selected.filter((spec) => !continuous(spec))) {
    if (ran.has(spec.name)) continue
    const together = (sharing.get(spec.name) ?? [spec.name]).map((name) => selected.find((other) => other.name === name)!)
    for (const member of together) ran.add(member.name)
    groups.push(together)
  }
  yield* Effect.forEach(groups, (together) => sideBySide(together, (member, readers) => runOnce(member, undefined, readers), sharing), {
    concurrency: config.parallelExports ?? 1,
    discard: true
  })
  // A continuous export runs window after window, each a published run, until `stop` aborts or a window fails;
  // several of them read side by side.
  yield* sideBySide(selected.filter(continuous), (spec, readers) =>
    Effect.iterate(true, {
      while: (succeeded) => succeeded && !stop.aborted,
      body: () => runOnce(spec, { stop }, readers)
    }),
    sharing
  )
  // In config order, whichever finished first.
  const order = (run: ExportRun) => selected.findIndex((spec) => spec.name === (run._tag === "success" ? run.result.exportName : run.exportName))
  return runs.sort((x, y) => order(x) - order(y))
}, Effect.scoped)

/**
 * Runs `specs` side by side; each export reading a shared resource gets its readers (`sharing`), each of whose
 * `ended` completes when that export's `run` has.
 */
const sideBySide = <E, R>(
  specs: ReadonlyArray<ExportConfig>,
  run: (spec: ExportConfig, readers: ReadonlyArray<SharedReader> | undefined) => Effect.Effect<unknown, E, R>,
  sharing: ReadonlyMap<string, ReadonlyArray<string>>
) =>
  Effect.gen(function* () {
    const ended = new Map<string, Deferred.Deferred<void>>()
    for (const spec of specs) ended.set(spec.name, yield* Deferred.make<void>())
    const readersOf = (spec: ExportConfig) =>
      sharing.get(spec.name)?.map((name) => ({ exportName: name, ended: ended.has(name) ? Deferred.await(ended.get(name)!) : Effect.void }))
    yield* Effect.forEach(specs, (spec) => Effect.ensuring(run(spec, readersOf(spec)), Deferred.succeed(ended.get(spec.name)!, undefined)), {
      concurrency: "unbounded",
      discard: true
    })
  })

/**
 * The exports reading a shared resource (`ExportMode.sharedRead`) with others, by export name: all of them, in config
 * order. Selecting some of them and not the others is refused: they can only be read together.
 */
const sharingOf = (config: RivetConfig, selected: ReadonlyArray<ExportConfig>) => {
  const byResource = new Map<string, Array<string>>()
  for (const spec of config.exports) {
    const resource = spec.mode.sharedRead(spec.name, spec.table)?.resource
    if (resource !== undefined) byResource.set(resource, [...(byResource.get(resource) ?? []), spec.name])
  }
  const sharing = new Map<string, ReadonlyArray<string>>()
  for (const [resource, names] of byResource) {
    if (names.length < 2) continue
    const chosen = names.filter((name) => selected.some((spec) => spec.name === name))
    if (chosen.length > 0 && chosen.length < names.length) {
      const left = names.filter((name) => !chosen.includes(name))
      return Effect.fail(
        new ConfigError({
          path: "--export",
          message: `export '${chosen[0]}' reads ${resource} together with ${left.map((name) => `'${name}'`).join(", ")}, which ${left.length === 1 ? "is" : "are"} not selected`,
          hint: `select them together (${names.map((name) => `-e ${name}`).join(" ")}), or give the export its own`
        })
      )
    }
    for (const name of names) sharing.set(name, names)
  }
  return Effect.succeed(sharing)
}

/** The tagged error of a failed export; an unexpected defect (a plugin that threw) becomes a PluginError. */
const errorOf = (cause: Cause.Cause<RivetError>, spec: ExportConfig): RivetError => {
  const failure = Cause.failureOption(cause)
  if (Option.isSome(failure)) return failure.value
  const guarded = guardedPluginError(cause)
  if (guarded !== undefined) return guarded
  const defect = Cause.squash(cause)
  return new PluginError({
    plugin: `${spec.format.plugin.type}/${spec.destination.plugin.type}`,
    message: `export '${spec.name}' failed unexpectedly: ${describeCause(defect)}`,
    hint: "this is a bug in a plugin or in Rivet; run with --verbose for details",
    ...defectDetail(defect)
  })
}
