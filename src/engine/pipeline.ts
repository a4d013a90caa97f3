import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Metric from "effect/Metric"
import * as Option from "effect/Option"
import * as Stream from "effect/Stream"
import { createHash } from "node:crypto"
import { type CursorState, StateStore } from "../state/store.js"
import { dateReader } from "../core/clock.js"
import type { ExportConfig } from "../config/model.js"
import { describeCause, IntegrityError, type SinkError, StateError } from "../core/errors.js"
import { acquireLease, DEFAULT_LEASE_TTL_MS, type LeaseSettings } from "./lease.js"
import { joinAsWorker, type WorkerSettings } from "./worker-join.js"
import {
  encodeManifest,
  encodeSuccessMarker,
  type Manifest,
  type PartRecord,
  schemaEntries,
  schemaFingerprint,
  sha256Hex
} from "../core/manifest.js"
import { chunkRunnerFor, type LaneSettings } from "./lanes/runner.js"
import { prepareMode } from "./modes/prepare.js"
import { progressEstimate } from "./modes/planning.js"
import type { ExportContext } from "./modes/context.js"
import { openJournal } from "./modes/journal.js"
import type { ModeOutcome, PreparedMode, RunJournal } from "./modes/mode.js"
import { makeDriftCheck } from "./modes/drift.js"
import { markerKeys } from "../core/naming.js"
import type { ModePlan } from "./plan/model.js"
import { checkPlannedExport } from "./plan/verify.js"
import { QualityGates } from "./quality/gates.js"
import { FormatDriver, SinkDriver, SourceDriver } from "../core/plugin.js"
import { ProgressReporter } from "../core/progress.js"
import { makeLiveProgress } from "./live-progress.js"
import { exportDuration } from "./telemetry/metrics.js"
import { DEFAULT_RETRY_POLICY, type RetryPolicy, withRetry } from "../core/retry.js"
import { cleanUpRunUploads, UploadLedger } from "./upload-cleanup.js"
import { withPartitionValues } from "./partition/check.js"

export { resolveSql } from "./modes/context.js"

/** What one export produced. */
export interface ExportResult {
  readonly exportName: string
  readonly runId: string
  /**
   * `skipped`: `skip_empty` was set and the run found no rows, so nothing was written. `joined`: a worker
   * (`--worker`) whose run another worker published.
   */
  readonly status: "success" | "skipped" | "joined"
  readonly mode: ExportConfig["mode"]["kind"]
  /** True when this run continued an interrupted checkpointed run. */
  readonly resumed: boolean
  readonly rows: number
  readonly bytes: number
  readonly retries: number
  readonly parts: ReadonlyArray<PartRecord>
  /** The URI of the destination root. */
  readonly uri: string
  /** Absent for destinations without markers (stdout) and for skipped runs. */
  readonly manifest?: Manifest | undefined
  /** Objects an interrupted attempt of this run left that the manifest does not list (resumed runs only). */
  readonly untracked: ReadonlyArray<string>
  /** The statements this run executed, in unit order, parameters inline (as `rivet plan` shows them). */
  readonly statements: ReadonlyArray<string>
  readonly durationMs: number
}

export interface RunOptions {
  /** The source plugin's `type`, recorded in the manifest. */
  readonly sourceType: string
  readonly retry?: RetryPolicy
  /** Clock for names and manifests (tests pin it). */
  /** Continue the export's unfinished checkpointed run (`rivet run --resume`). */
  readonly resume?: boolean
  /** Chunked mode may run its chunks in worker threads that reload the config from this file (src/engine/lanes). */
  readonly lanes?: LaneSettings | undefined
  /** Run exactly this plan (`rivet run --plan`), refused when the config or the stored cursor moved since. */
  readonly plan?: ModePlan | undefined
  /** The export's lease: its time to live and how long to wait for another run holding it (default: 60 s, no wait). */
  readonly lease?: LeaseSettings | undefined
  /** `rivet run --worker`: join the distributed run named here instead of taking the export's lease. */
  readonly worker?: WorkerSettings | undefined
}

/** Objects named like this run's parts that the manifest does not list: leftovers of an interrupted attempt. */
const findUntracked = (ctx: ExportContext, outcome: ModeOutcome, journal: RunJournal) =>
  Effect.gen(function* () {
    const { list } = ctx.sink
    if (!journal.resumed || outcome.partStem === undefined || list === undefined) return []
    const listed = new Set(outcome.parts.map((part) => part.path))
    const objects = yield* withRetry(list, ctx.retry, () => {})
    return objects
      .map((object) => object.key)
      .filter((key) => key.startsWith(outcome.partStem!) && !listed.has(key))
      .sort()
  })

const manifestOf = (
  ctx: ExportContext,
  options: RunOptions,
  journal: RunJournal,
  outcome: ModeOutcome
): Manifest => {
  const { spec } = ctx
  return {
    manifest_version: 1,
    run_id: journal.runId,
    export_name: spec.name,
    started_at: journal.startedAt.toISOString(),
    finished_at: ctx.now().toISOString(),
    status: "success",
    source: {
      type: options.sourceType,
      schema: spec.table?.schema,
      table: spec.table?.name,
      query: spec.query,
      mode: spec.mode.kind,
      ...(outcome.cursor ? { cursor: { column: outcome.cursor.column, value: outcome.cursor.value } } : {})
    },
    destination: { type: spec.destination.plugin.type, uri: ctx.sink.uri() },
    format: spec.format.plugin.type,
    compression: ctx.format.compression,
    schema: schemaEntries(outcome.schema),
    schema_fingerprint: schemaFingerprint(outcome.schema),
    row_count: outcome.parts.reduce((sum, part) => sum + part.rows, 0),
    part_count: outcome.parts.length,
    parts: spec.partition ? outcome.parts.map(withPartitionValues) : outcome.parts
  }
}

const showCursor = (cursor: CursorState | null): string =>
  cursor === null ? "none (it exports every row)" : `${cursor.column} = ${cursor.value}`

/** What the next run does when this published run's state could not be written. */
const nextRunAfterUnrecorded = (spec: ExportConfig, prepared: PreparedMode, cursorFrom: CursorState | null): string => {
  if (spec.mode.kind === "incremental") {
    return `the stored cursor stays at ${showCursor(cursorFrom)}, so the next run exports this run's rows again (they will be in the files of two runs, each listed by its own manifest)`
  }
  if (prepared.checkpointed) {
    return "the run stays unfinished in the state: the next run refuses to start until `rivet run --resume` publishes it again from its recorded chunks or pages, or `rivet state reset` forgets it"
  }
  return `the next run exports its rows again as every run of mode: ${spec.mode.kind} does; only this run's journal entry and file records are missing`
}

/** Reads back `manifest.json` and fails unless it is the one this run wrote: another run may have published over it. */
const verifyOwnManifest = (ctx: ExportContext, runId: string, written: Uint8Array) =>
  Effect.gen(function* () {
    const { read } = ctx.sink
    if (read === undefined) return
    const keys = markerKeys(ctx.spec.name, ctx.spec.sharedDestination === true)
    const readBack = <A>(collect: (bytes: Stream.Stream<Uint8Array, SinkError>) => Effect.Effect<A, SinkError>) =>
      withRetry(collect(read(keys.manifest)), ctx.retry, () => ctx.progress.retried)
    // Hashed as it streams in: a manifest of many parts is megabytes, read back only to be compared.
    const readHash = yield* readBack((bytes) =>
      Effect.map(Stream.runFold(bytes, createHash("sha256"), (hash, chunk) => hash.update(chunk)), (hash) => hash.digest("hex"))
    )
    if (readHash === sha256Hex(written)) return
    const bytes = Buffer.concat([...(yield* readBack(Stream.runCollect))])
    const found = yield* Effect.try(() => JSON.parse(bytes.toString("utf8")) as { run_id?: unknown }).pipe(
      Effect.map((parsed) => (typeof parsed.run_id === "string" ? `run '${parsed.run_id}'` : "something else")),
      Effect.orElseSucceed(() => "unreadable bytes")
    )
    return yield* new IntegrityError({
      message: `export '${ctx.spec.name}': ${keys.manifest} at ${ctx.sink.uri()} is no longer the one run '${runId}' wrote (it now holds ${found}), so this run did not write ${keys.success}`,
      hint: `another run of the export published at the same destination meanwhile (two runs overlapped: a lease that expired while its holder still ran, or a process writing there without the shared state); its manifest and ${keys.success} stand, this run's files are listed only by its kept manifest ${keys.kept(runId)}, which \`rivet validate\` reports as not published`
    })
  })

/**
 * Runs one export: the mode's units (one query, chunks or pages) → format → sink parts → `manifest.json` →
 * `_SUCCESS` → state (journal, committed parts, cursor). State advances only after `_SUCCESS` is written; a run
 * that fails or is interrupted leaves the cursor where it was and is journaled as such. Everything opened
 * (cursors, uploads) is released — uploads aborted — when a unit fails or is interrupted; whatever the outcome,
 * uploads still pending under the run's keys (a lost begin response) are aborted when the export ends.
 */
export const runExport = Effect.fn("Pipeline.runExport")(function* (spec: ExportConfig, options: RunOptions) {
  const reporter = yield* ProgressReporter
  yield* Effect.annotateCurrentSpan({ "rivet.export": spec.name, "rivet.mode": spec.mode.kind })
  for (const notice of spec.notices ?? []) yield* reporter.notice(spec.name, `${notice.path}: ${notice.message}`)
  const now = yield* dateReader
  const startedAt = now().getTime()
  const progress = yield* makeLiveProgress(spec.name, startedAt)
  const state = yield* StateStore
  const keys = markerKeys(spec.name, spec.sharedDestination === true)
  // Taken before anything reads the cursor, the destination or the source: one run per export at a time — or, for
  // a worker of a distributed run, the run's publish lease, taken once all its units are done.
  const joined = options.worker ? yield* joinAsWorker(spec, state, options.worker) : undefined
  const lease =
    joined?.lease ??
    (yield* acquireLease(
      { exportName: spec.name, state, reporter },
      options.lease ?? { ttlMs: DEFAULT_LEASE_TTL_MS, waitMs: 0 },
      { resume: options.resume ?? false }
    ))
  const cursorFrom = Option.getOrNull(yield* state.cursor(spec.name))
  const drift = yield* makeDriftCheck(spec, state, reporter)
  const gates = spec.quality ? new QualityGates(spec.name, spec.quality) : undefined
  yield* Effect.addFinalizer(() => Effect.sync(() => gates?.close()))
  const uploads = new UploadLedger()
  const sink = yield* SinkDriver
  const ctx: ExportContext = {
    spec,
    source: yield* SourceDriver,
    format: yield* FormatDriver,
    sink,
    state,
    reporter,
    progress,
    retry: options.retry ?? DEFAULT_RETRY_POLICY,
    now,
    gates,
    checkSchema: drift.check,
    // Only a destination with pending uploads to abort needs their keys (a partitioned run begins thousands).
    uploads: sink.pendingUploads === undefined ? undefined : uploads,
    worker: joined?.worker,
    chunkRunner: (lanes, overlap) => chunkRunnerFor(ctx, options.lanes)(lanes, overlap)
  }
  // Other workers' temp files are not leftovers.
  if (ctx.sink.sweep && !joined) {
    const swept = yield* ctx.sink.sweep
    if (swept.length > 0) {
      yield* reporter.notice(spec.name, `removed ${swept.length} temp file(s) left by an interrupted earlier run`)
    }
  }
  const prepared = yield* prepareMode(ctx)
  if (options.plan) yield* checkPlannedExport(ctx, prepared, options.plan)
  const journal = yield* openJournal(ctx, prepared, options.resume ?? false)
  yield* lease.attach(journal.runId)
  yield* progress.setEstimate(yield* progressEstimate(prepared, options.plan))

  const totals = (parts: ReadonlyArray<PartRecord>) => ({
    rows: parts.reduce((sum, part) => sum + part.rows, 0),
    parts: parts.length,
    bytes: parts.reduce((sum, part) => sum + part.size_bytes, 0)
  })
  const retried = <A, E extends SinkError>(effect: Effect.Effect<A, E>) =>
    withRetry(effect, ctx.retry, () => progress.retried)

  /** Right before publishing: the lease is still this run's, and no other run moved the cursor meanwhile. */
  const stillOurs = Effect.gen(function* () {
    yield* lease.confirm
    if (spec.mode.kind !== "incremental") return
    const stored = Option.getOrNull(yield* state.cursor(spec.name))
    if (stored?.value === cursorFrom?.value && stored?.column === cursorFrom?.column) return
    return yield* new StateError({
      message: `export '${spec.name}': the stored cursor moved from ${showCursor(cursorFrom)} to ${showCursor(stored)} while run '${journal.runId}' ran, so this run publishes nothing`,
      hint: "another run of the export stored its cursor meanwhile; the next run continues from that cursor (this run's files are listed by no manifest)",
      retryable: true
    })
  })

  /** Everything up to `_SUCCESS`: run only while the lease is held (raced against its loss below). */
  const produce = Effect.gen(function* () {
    yield* Effect.flatMap(progress.snapshot, reporter.started)
    // A slow reporter delays its own next tick, never the export.
    yield* Effect.forkScoped(
      Effect.forever(Effect.zipRight(Effect.sleep(reporter.intervalMs), Effect.flatMap(progress.snapshot, reporter.tick)))
    )
    const outcome = yield* prepared.execute(journal, options.plan)
    // Every unit is done: one last tick shows where the export ended, whatever the interval.
    yield* Effect.flatMap(progress.snapshot, reporter.tick)
    const total = totals(outcome.parts)
    if (outcome.publishedElsewhere) return { outcome, total, manifest: undefined, untracked: [], status: "joined" as const }
    if (spec.skipEmpty && total.rows === 0) {
      yield* ctx.state.finishRun(journal.runId, { status: "skipped", finishedAt: now().toISOString(), ...total })
      return { outcome, total, manifest: undefined, untracked: [], status: "skipped" as const }
    }
    yield* drift.check(outcome.schema)
    if (gates) {
      if (journal.resumed && gates.needsValues) {
        yield* reporter.notice(spec.name, "resumed run: NULL-ratio and uniqueness gates cover only the chunks or pages read by this attempt")
      }
      yield* gates.verdict(outcome.schema, total.rows)
    }
    // Listed before publishing and only reported: a listing that fails (no s3:ListBucket) must not fail a run whose
    // data is complete, least of all after its _SUCCESS is written.
    const untracked = yield* findUntracked(ctx, outcome, journal).pipe(
      Effect.catchAll((error) =>
        Effect.as(
          reporter.notice(spec.name, `could not list the destination for files of the interrupted attempt (${error.message}); \`rivet validate\` reports them`),
          []
        )
      )
    )
    yield* stillOurs
    let manifest: Manifest | undefined
    if (ctx.sink.capabilities.markers) {
      manifest = manifestOf(ctx, options, journal, outcome)
      const manifestBytes = encodeManifest(manifest)
      // The kept copy goes first, so no _SUCCESS can vouch for a run whose manifest is not kept; a crash before the
      // latest manifest leaves a kept manifest of a run that never published (docs/semantics.md §1).
      yield* retried(ctx.sink.put(keys.kept(journal.runId), manifestBytes, "application/json"))
      yield* retried(ctx.sink.put(keys.manifest, manifestBytes, "application/json"))
      yield* verifyOwnManifest(ctx, journal.runId, manifestBytes)
      yield* retried(ctx.sink.put(keys.success, encodeSuccessMarker(manifestBytes), "text/plain"))
    }
    return { outcome, total, manifest, untracked, status: "success" as const }
  })

  /** The published run's state: its outcome, parts and cursor (compare-and-set), written under its lease. */
  const record = (produced: Effect.Effect.Success<typeof produce>) =>
    Effect.gen(function* () {
      const { outcome, total, manifest, status } = produced
      if (status !== "success") return produced
      const published = manifest
        ? `${keys.manifest} and ${keys.success} written at ${ctx.sink.uri()}`
        : `its ${total.parts} file(s) written`
      yield* ctx.state
        .finishRun(
          journal.runId,
          { status: "success", finishedAt: now().toISOString(), ...total },
          {
            parts: outcome.unrecorded,
            cursor: outcome.cursor,
            cursorFrom: outcome.cursor ? cursorFrom : undefined,
            lease: lease.proof
          }
        )
        .pipe(
          Effect.mapError(
            (error) =>
              new StateError({
                message: `export '${spec.name}': run '${journal.runId}' is published (${published}) but its state was not updated: ${error.message}`,
                hint: `${nextRunAfterUnrecorded(spec, prepared, cursorFrom)}. ${error.hint ?? ""}`.trim(),
                retryable: true
              })
          )
        )
      yield* drift.baselineAfterSuccess
      return produced
    })

  // A run whose lease was taken over stops where it is: its uploads are aborted, nothing more is published. Any
  // other failure of a run that has lost its lease (the new holder swept its temp files) is reported as that loss.
  const publish = Effect.raceFirst(produce, lease.lost).pipe(
    Effect.catchAll((error) => Effect.flatMap(lease.lostNow, (lost) => Effect.fail(Option.getOrElse(lost, () => error)))),
    Effect.flatMap(record),
    Effect.onExit((exit) =>
      // A worker's failure is not its run's: the other workers go on, and its unit went back to them.
      Exit.isSuccess(exit) || joined
        ? Effect.void
        : Effect.flatMap(progress.snapshot, (reached) =>
            ctx.state.finishRun(journal.runId, {
              status: Cause.isInterruptedOnly(exit.cause) ? "interrupted" : "failed",
              finishedAt: now().toISOString(),
              rows: reached.rows,
              parts: reached.parts,
              bytes: reached.bytes,
              error: Option.match(Cause.failureOption(exit.cause), {
                onNone: () => (Cause.isInterruptedOnly(exit.cause) ? "interrupted" : describeCause(Cause.squash(exit.cause))),
                onSome: (error) => error.message
              })
            })
          ).pipe(Effect.ignore)
    )
  )
  const { outcome, manifest, untracked, status } = yield* publish.pipe(
    Effect.ensuring(cleanUpRunUploads(ctx.sink, uploads, ctx.retry, reporter, spec.name))
  )
  const total = totals(outcome.parts)
  const reached = yield* progress.snapshot
  const durationMs = now().getTime() - startedAt
  yield* Metric.update(exportDuration, durationMs / 1000).pipe(Effect.tagMetrics("export", spec.name))
  yield* Effect.annotateCurrentSpan({
    "rivet.run_id": journal.runId,
    "rivet.status": status,
    "rivet.rows": total.rows,
    "rivet.bytes": reached.bytes,
    "rivet.parts": total.parts,
    "rivet.retries": reached.retries
  })
  return {
    exportName: spec.name,
    runId: journal.runId,
    status,
    mode: spec.mode.kind,
    resumed: journal.resumed,
    rows: total.rows,
    bytes: reached.bytes,
    retries: reached.retries,
    parts: outcome.parts,
    uri: ctx.sink.uri(),
    manifest,
    untracked,
    statements: outcome.statements ?? [],
    durationMs
  } satisfies ExportResult
}, Effect.scoped, Effect.tapError((error) => Effect.annotateCurrentSpan("rivet.error.kind", error._tag)))
