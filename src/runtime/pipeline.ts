import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { ExportConfig } from "./config/model.js"
import { encodeParts } from "./encode-parts.js"
import {
  encodeManifest,
  encodeSuccessMarker,
  type Manifest,
  type PartRecord,
  schemaEntries,
  schemaFingerprint
} from "./manifest.js"
import { MANIFEST_KEY, makeRunId, singleRunnerPartName, SUCCESS_KEY } from "./naming.js"
import { FormatDriver, SinkDriver, SourceDriver, type SourceQuery } from "./plugin.js"
import { type ExportProgress, ProgressReporter } from "./progress.js"
import { DEFAULT_RETRY_POLICY, type RetryPolicy, withRetry } from "./retry.js"
import { uploadParts } from "./upload-parts.js"

/** What one successful export produced. */
export interface ExportResult {
  readonly exportName: string
  readonly runId: string
  readonly rows: number
  readonly bytes: number
  readonly retries: number
  readonly parts: ReadonlyArray<PartRecord>
  /** The URI of the destination root. */
  readonly uri: string
  /** Absent for destinations without markers (stdout). */
  readonly manifest?: Manifest | undefined
  readonly durationMs: number
}

export interface RunOptions {
  /** The source plugin's `type`, recorded in the manifest. */
  readonly sourceType: string
  readonly retry?: RetryPolicy
  /** Clock for names and manifests (tests pin it). */
  readonly now?: () => Date
}

/** `SELECT * FROM "schema"."table"` for a table shortcut, or the export's own query. */
export const resolveSql = (spec: ExportConfig, defaultSchema?: string): string => {
  if (spec.query !== undefined) return spec.query
  const quote = (identifier: string) => `"${identifier.replaceAll('"', '""')}"`
  const table = spec.table!
  const schema = table.schema ?? defaultSchema
  return `SELECT * FROM ${schema ? `${quote(schema)}.` : ""}${quote(table.name)}`
}

const sourceQuery = (spec: ExportConfig): SourceQuery => ({
  exportName: spec.name,
  sql: resolveSql(spec),
  table: spec.table,
  batchSize: spec.batchSize,
  columnTypes: spec.columnTypes
})

/**
 * Runs one export: source rows → format → sink parts → `manifest.json` → `_SUCCESS`.
 * Everything opened (cursor, uploads) lives in this effect's scope and is released — aborted on failure
 * or interruption — when it ends.
 */
export const runExport = Effect.fn("Pipeline.runExport")(function* (spec: ExportConfig, options: RunOptions) {
  const source = yield* SourceDriver
  const format = yield* FormatDriver
  const sink = yield* SinkDriver
  const reporter = yield* ProgressReporter
  const now = options.now ?? (() => new Date())
  const startedAt = now()
  const runId = makeRunId(spec.name, startedAt)
  const progress: ExportProgress = {
    exportName: spec.name,
    startedAt: startedAt.getTime(),
    rows: 0,
    bytes: 0,
    parts: 0,
    retries: 0
  }

  yield* reporter.started(progress)
  yield* Effect.forkScoped(
    Effect.forever(Effect.zipRight(Effect.sleep(reporter.intervalMs), Effect.suspend(() => reporter.tick(progress))))
  )

  const result = yield* source.open(sourceQuery(spec))
  yield* format.validate(result.schema)

  let partsOpenedAt: Date | undefined
  const keyOf = (part: number) => {
    partsOpenedAt ??= now()
    return singleRunnerPartName(spec.name, partsOpenedAt, format.extension, part, spec.maxFileSize !== undefined)
  }
  const retry = options.retry ?? DEFAULT_RETRY_POLICY
  const onRetry = () => {
    progress.retries++
  }

  const batches = result.batches.pipe(
    Stream.tap((batch) => Effect.sync(() => (progress.rows += batch.rowCount))),
    // Fetch the next batch while this one is encoded, and encode while the previous part bytes upload. Each slot
    // holds a whole batch (or an encoder's output for one: a CSV batch, a Parquet row group), so the capacities
    // stay small: they bound memory, and one slot is enough to keep both sides busy.
    Stream.buffer({ capacity: 1 })
  )
  const pieces = encodeParts(batches, format, result.schema, spec.maxFileSize).pipe(Stream.buffer({ capacity: 2 }))
  const parts = yield* uploadParts(pieces, {
    sink,
    contentType: format.contentType,
    keyOf,
    retry,
    onRetry,
    onCommitted: () => {
      progress.parts++
    },
    onBytes: (count) => {
      progress.bytes += count
    }
  })

  const rows = parts.reduce((sum, part) => sum + part.rows, 0)
  let manifest: Manifest | undefined
  if (sink.capabilities.markers) {
    manifest = {
      manifest_version: 1,
      run_id: runId,
      export_name: spec.name,
      started_at: startedAt.toISOString(),
      finished_at: now().toISOString(),
      status: "success",
      source: {
        type: options.sourceType,
        schema: spec.table?.schema,
        table: spec.table?.name,
        query: spec.query
      },
      destination: { type: spec.destination.plugin.type, uri: sink.uri() },
      format: spec.format.plugin.type,
      compression: format.compression,
      schema: schemaEntries(result.schema),
      schema_fingerprint: schemaFingerprint(result.schema),
      row_count: rows,
      part_count: parts.length,
      parts
    }
    const manifestBytes = encodeManifest(manifest)
    yield* withRetry(sink.put(MANIFEST_KEY, manifestBytes, "application/json"), retry, onRetry)
    yield* withRetry(sink.put(SUCCESS_KEY, encodeSuccessMarker(manifestBytes), "text/plain"), retry, onRetry)
  }

  return {
    exportName: spec.name,
    runId,
    rows,
    bytes: progress.bytes,
    retries: progress.retries,
    parts,
    uri: sink.uri(),
    manifest,
    durationMs: now().getTime() - startedAt.getTime()
  } satisfies ExportResult
}, Effect.scoped)
