import * as Effect from "effect/Effect"
import * as Metric from "effect/Metric"
import * as MetricBoundaries from "effect/MetricBoundaries"
import type { UnitStats } from "../unit-stats.js"

// The run's metrics, as Effect `Metric`s: cheap in-memory values when nothing reads them, exported over OTLP when
// telemetry is on (engine/telemetry/otel.ts). Counters count only what successful units wrote, so their totals
// equal the manifests'; every metric is tagged with the export, unit timings with the kind of unit and the lane.
// docs/observability.md lists them.

export const rowsWritten = Metric.counter("rivet.rows", { description: "rows written to committed parts", incremental: true })
export const bytesWritten = Metric.counter("rivet.bytes", { description: "bytes of committed parts", incremental: true })
export const partsCommitted = Metric.counter("rivet.parts", { description: "parts committed", incremental: true })
export const retries = Metric.counter("rivet.retries", {
  description: "retried sink calls and units read again",
  incremental: true
})

const seconds = MetricBoundaries.exponential({ start: 0.005, factor: 2, count: 16 })
const histogram = (name: string, description: string) => Metric.histogram(name, seconds, description)

export const exportDuration = histogram("rivet.export.duration", "seconds one export took, start to finish")
export const unitDuration = histogram("rivet.unit.duration", "seconds one attempt of a unit took")
export const partUploadDuration = histogram("rivet.part.upload.duration", "seconds from a part's first block to its commit")
export const sourceWait = histogram("rivet.unit.source_wait", "seconds a unit waited for the source's batches")
export const encodeTime = histogram("rivet.unit.encode", "seconds a unit spent encoding (source wait excluded)")
export const uploadTime = histogram("rivet.unit.upload", "seconds a unit's upload had to wait for, beyond its encoded parts")

/** A successful attempt's stats (or a failed one's retries) join the export's counters. */
export const countCommitted = (exportName: string, stats: UnitStats): Effect.Effect<void> =>
  Effect.all(
    [
      Metric.incrementBy(rowsWritten, stats.rows),
      Metric.incrementBy(bytesWritten, stats.bytes),
      Metric.incrementBy(partsCommitted, stats.parts),
      Metric.incrementBy(retries, stats.retries)
    ],
    { discard: true }
  ).pipe(Effect.tagMetrics("export", exportName))

export const countRetry = (exportName: string): Effect.Effect<void> =>
  Metric.increment(retries).pipe(Effect.tagMetrics("export", exportName))

/** Where a unit's time went: waiting for the source, encoding, and uploading beyond that. */
export interface UnitTimings {
  readonly sourceWaitMs: number
  readonly encodeMs: number
  readonly uploadMs: number
  readonly totalMs: number
}

export const recordUnit = (
  tags: { readonly exportName: string; readonly unit: string; readonly lane: string },
  timings: UnitTimings
): Effect.Effect<void> =>
  Effect.all(
    [
      Metric.update(unitDuration, timings.totalMs / 1000),
      Metric.update(sourceWait, timings.sourceWaitMs / 1000),
      Metric.update(encodeTime, timings.encodeMs / 1000),
      Metric.update(uploadTime, timings.uploadMs / 1000)
    ],
    { discard: true }
  ).pipe(Effect.tagMetrics({ export: tags.exportName, unit: tags.unit, lane: tags.lane }))
