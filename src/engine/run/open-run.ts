import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { ExportConfig } from "../../config/model.js"
import { dateReader } from "../../core/clock.js"
import { markerKeys } from "../../core/naming.js"
import { FormatDriver, SinkDriver, SourceDriver } from "../../core/plugin.js"
import { ProgressReporter } from "../../core/progress.js"
import { DEFAULT_RETRY_POLICY } from "../../core/retry.js"
import { StateStore } from "../../state/store.js"
import { chunkRunnerFor } from "../lanes/runner.js"
import { makeLiveProgress } from "../live-progress.js"
import type { ExportContext } from "../modes/context.js"
import { makeDriftCheck } from "../modes/drift.js"
import { runIdentityOf } from "../modes/run-identity.js"
import type { UnitContext } from "../modes/unit-context.js"
import { QualityGates } from "../quality/gates.js"
import { TABLE_DATA_PREFIX } from "../table-format/layout.js"
import { openTable } from "../table-format/table-format.js"
import { UploadLedger } from "../upload-cleanup.js"
import type { ExportRun } from "./export-run.js"
import type { TakenLease } from "./lease-step.js"
import type { RunOptions } from "./run-options.js"

/**
 * What a run works with once it holds its lease: the cursor it starts from, the schema baseline, the quality gates
 * (closed with the run's scope), the ledger of its uploads, and the export's context. The context's chunk runner is
 * built from the unit context the context extends, so neither refers to itself.
 */
export const openExportRun = Effect.fn("Run.open")(function* (
  spec: ExportConfig,
  options: RunOptions,
  startedAt: number,
  taken: TakenLease
) {
  const state = yield* StateStore
  const reporter = yield* ProgressReporter
  const cursorFrom = Option.getOrNull(yield* state.cursor(spec.name))
  const drift = yield* makeDriftCheck(spec, state, reporter)
  const gates = spec.quality ? new QualityGates(spec.name, spec.quality) : undefined
  yield* Effect.addFinalizer(() => Effect.sync(() => gates?.close()))
  // A table's parts are under its data/ folder: the stems of their names start there.
  const uploads = new UploadLedger(spec.tableFormat === undefined ? "" : TABLE_DATA_PREFIX)
  const sink = yield* SinkDriver
  const source = yield* SourceDriver
  const retry = options.retry ?? DEFAULT_RETRY_POLICY
  const table = yield* openTable(spec, sink, retry)
  const format = yield* FormatDriver
  const unitContext: UnitContext = {
    spec,
    source,
    format: table === undefined ? format : table.format(format),
    sink,
    reporter,
    progress: yield* makeLiveProgress(spec.name, startedAt),
    retry,
    gates,
    checkSchema: drift.check,
    maskKey: options.maskKey,
    // Only a destination with pending uploads to abort needs their keys (a partitioned run begins thousands).
    uploads: sink.pendingUploads === undefined ? undefined : uploads
  }
  const ctx: ExportContext = {
    ...unitContext,
    state,
    now: yield* dateReader,
    worker: taken.worker,
    follow: options.follow,
    sharing: options.sharing,
    identity: runIdentityOf({
      spec,
      sourceType: options.sourceType,
      sourceConfig: options.sourceConfig,
      source,
      destinationUri: sink.uri()
    }),
    // A lane thread builds its own format driver from the config, without the table's field ids: a table's chunks
    // run in this thread, `parallel` of them at once.
    chunkRunner: chunkRunnerFor(unitContext, table === undefined ? options.lanes : undefined)
  }
  const keys = markerKeys(spec.name, spec.sharedDestination === true)
  return { ctx, options, lease: taken.lease, startedAt, keys, cursorFrom, drift, uploads, table } satisfies ExportRun
})
