import type * as FileSystem from "@effect/platform/FileSystem"
import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import * as Option from "effect/Option"
import { StateStore } from "../../state/store.js"
import type { ExportConfig, RivetConfig } from "../../config/model.js"
import { describeCause, PluginError, type RivetError, type StateError } from "../../core/errors.js"
import { exportLayer, sourceLayer } from "../../engine/layers.js"
import type { ExportContext } from "../../engine/modes/context.js"
import { prepareMode } from "../../engine/modes/prepare.js"
import { FormatDriver, SinkDriver, SourceDriver } from "../../core/plugin.js"
import type { ProgressReporterShape } from "../../core/progress.js"
import { dateReader } from "../../core/clock.js"
import { DEFAULT_RETRY_POLICY } from "../../core/retry.js"
import { selectExports } from "../../engine/run.js"
import { PLAN_VALIDITY_MS, PLAN_VERSION, type PlanFile, type PlannedExport } from "../../engine/plan/model.js"
import type { ConfigIdentity } from "../../engine/plan/verify.js"
import { makeLiveProgress } from "../../engine/live-progress.js"
import { TABLE_DATA_PREFIX } from "../../engine/table-format/layout.js"
import { describeTable } from "../../engine/table-format/table-format.js"
import { planPartitions } from "./partitions.js"

type Env = Readonly<Record<string, string | undefined>>

export interface PlanOptions {
  /** Plan only these exports (by name), in config order. */
  readonly only?: ReadonlyArray<string> | undefined
  readonly env?: Env | undefined
  /**
   * Where state is read (the incremental cursor), chosen at the edge: the CLI reads the config's state without
   * creating it (`readOnlyStateLayerFor`).
   */
  readonly state: Layer.Layer<StateStore, StateError, FileSystem.FileSystem>
}

export type ExportPlanning =
  | { readonly _tag: "planned"; readonly plan: PlannedExport }
  | { readonly _tag: "failure"; readonly exportName: string; readonly error: RivetError }

/** Plans one export: its mode resolved against the source and its plan made — the destination is never touched. */
const planExport = (spec: ExportConfig, now: () => Date) =>
  Effect.gen(function* () {
    const notices: Array<string> = (spec.notices ?? []).map((notice) => `${notice.path}: ${notice.message}`)
    const reporter: ProgressReporterShape = {
      started: () => Effect.void,
      tick: () => Effect.void,
      finished: () => Effect.void,
      notice: (_exportName, message) => Effect.sync(() => void notices.push(message)),
      intervalMs: 60_000
    }
    const ctx: ExportContext = {
      spec,
      source: yield* SourceDriver,
      format: yield* FormatDriver,
      sink: yield* SinkDriver,
      state: yield* StateStore,
      reporter,
      progress: yield* makeLiveProgress(spec.name, now().getTime()),
      retry: DEFAULT_RETRY_POLICY,
      now,
      checkSchema: () => Effect.void
    }
    const prepared = yield* prepareMode(ctx)
    const table = yield* describeTable(spec, ctx.sink, ctx.retry)
    const modePlan = yield* prepared.plan
    // A table's data files go under its data/ folder.
    const plan = table === undefined ? modePlan : { ...modePlan, table, naming: `${TABLE_DATA_PREFIX}${modePlan.naming}` }
    if (spec.partition === undefined) return { ...plan, notices } satisfies PlannedExport
    const { planned, notice } = yield* planPartitions(ctx, spec.partition)
    if (notice !== undefined) notices.push(notice)
    const directories = planned.by.map((key) => `${key}={${key}}/`).join("")
    const naming = table === undefined ? `${directories}${plan.naming}` : `${TABLE_DATA_PREFIX}${directories}${modePlan.naming}`
    return { ...plan, naming, partitions: planned, notices } satisfies PlannedExport
  })

const errorOf = (cause: Cause.Cause<RivetError>, spec: ExportConfig): RivetError =>
  Option.getOrElse(
    Cause.failureOption(cause),
    () =>
      new PluginError({
        plugin: `${spec.format.plugin.type}/${spec.destination.plugin.type}`,
        message: `planning export '${spec.name}' failed unexpectedly: ${describeCause(Cause.squash(cause))}`,
        hint: "this is a bug in a plugin or in Rivet; run with --verbose for details"
      })
  )

/**
 * Plans the selected exports without running them: connects to the source (read-only transactions: catalog
 * statistics, key bounds), reads the state (cursors), writes nothing anywhere. A failing export does not stop the
 * others; the plan file is returned only when every export was planned.
 */
export const planConfig = Effect.fn("Rivet.planConfig")(function* (
  config: RivetConfig,
  identity: ConfigIdentity,
  options: PlanOptions
) {
  const selected = yield* selectExports(config, options.only)
  const env = options.env ?? process.env
  const now = yield* dateReader
  const sourceContext = yield* Layer.build(sourceLayer(config, env))
  const stateContext = yield* Layer.build(options.state)
  yield* Effect.flatMap(SourceDriver, (source) => source.check).pipe(Effect.provide(sourceContext))
  const createdAt = now()
  const outcomes: Array<ExportPlanning> = []
  for (const spec of selected) {
    const exit = yield* planExport(spec, now).pipe(
      Effect.provide(exportLayer(config, spec, env)),
      Effect.provide(sourceContext),
      Effect.provide(stateContext),
      Effect.exit
    )
    if (Exit.isSuccess(exit)) outcomes.push({ _tag: "planned", plan: exit.value })
    else if (Cause.isInterruptedOnly(exit.cause)) return yield* Effect.interrupt
    else outcomes.push({ _tag: "failure", exportName: spec.name, error: errorOf(exit.cause, spec) })
  }
  const planned = outcomes.flatMap((outcome) => (outcome._tag === "planned" ? [outcome.plan] : []))
  const file: PlanFile | undefined =
    planned.length === outcomes.length
      ? {
          plan_version: PLAN_VERSION,
          created_at: createdAt.toISOString(),
          expires_at: new Date(createdAt.getTime() + PLAN_VALIDITY_MS).toISOString(),
          config: { path: identity.path, sha256: identity.sha256 },
          exports: planned
        }
      : undefined
  return { outcomes, file }
}, Effect.scoped)
