import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { type Batch, type BatchSchema, type Value, valueAt } from "../../core/batch.js"
import { encodeParts, encodeRenderedParts, type PartPiece } from "../encode-parts.js"
import { ConfigError, type RivetError, SourceError } from "../../core/errors.js"
import { keyText } from "../../core/key-text.js"
import { maskResult, personalColumnsNotice } from "../masking.js"
import { metaColumnsAppender, withMetaColumns } from "../meta-columns.js"
import type { ColumnRef, RenderedOrBatches } from "../../core/plugin.js"
import { type PartNaming, partitionedUnit } from "../partition/unit.js"
import { uploadParts } from "../upload-parts.js"
import type { AttemptMeter } from "../live-progress.js"
import { nowMs, timedPulls } from "../telemetry/timing.js"
import type { SourceRead, UnitOutcome, UnitWork } from "./unit.js"
import type { UnitContext } from "./unit-context.js"
import { partCapFor } from "./part-cap.js"
import { TABLE_DATA_PREFIX } from "../table-format/layout.js"

const refColumns = (ref: ColumnRef): ReadonlyArray<string> => (typeof ref === "string" ? [ref] : ref.columns)

/** Remembers the last non-NULL value of some columns (a coalesced one: the first of its columns not NULL) as batches pass by. */
const makeTracker = (ctx: UnitContext, schema: BatchSchema, refs: ReadonlyArray<ColumnRef>) => {
  const indexesOf = (ref: ColumnRef) => refColumns(ref).map((name) => schema.columns.findIndex((column) => column.name === name))
  const missing = refs.flatMap(refColumns).filter((name) => !schema.columns.some((column) => column.name === name))
  if (missing.length > 0) {
    return Effect.fail(
      new SourceError({
        source: ctx.source.label,
        message: `export '${ctx.spec.name}': the result has no column ${missing.map((name) => `'${name}'`).join(", ")}`,
        hint: `the result has: ${schema.columns.map((column) => column.name).join(", ")}`,
        retryable: false
      })
    )
  }
  const tracked = refs.map(indexesOf)
  const last: Array<string | undefined> = refs.map(() => undefined)
  const observe = (batch: Batch) => {
    tracked.forEach((indexes, i) => {
      for (let row = batch.rowCount - 1; row >= 0; row--) {
        let value: Value = null
        let index = -1
        for (const candidate of indexes) {
          value = valueAt(batch.columns[candidate]!, schema.columns[candidate]!.type, row)
          index = candidate
          if (value !== null) break
        }
        if (value === null) continue
        last[i] = keyText(schema.columns[index]!.type, value)
        return
      }
    })
  }
  return Effect.succeed({ observe, last })
}

/** Columns whose values the run keeps in its state: a cursor, a chunk range's column, a page's sort key. */
const keptColumns = (work: UnitWork): ReadonlyArray<string> => [
  ...(work.track ?? []).flatMap(refColumns),
  ...(work.query.orderBy ?? []).flatMap(refColumns),
  ...(work.query.where ?? []).flatMap((filter) => (filter._tag === "Between" || filter._tag === "IsNull" ? [filter.column] : []))
]

/**
 * Whether the unit may read rows the source rendered in the format's dialect (PostgreSQL's COPY … CSV): only when
 * nothing needs the values — no transform, no quality gate reading values, no tracked cursor column.
 */
const mayRender = (ctx: UnitContext, work: UnitWork): boolean =>
  work.open === undefined &&
  ctx.spec.masks.length === 0 &&
  work.rowsPerPart === undefined &&
  ctx.format.rendered !== undefined &&
  ctx.source.openRendered !== undefined &&
  ctx.spec.transform === undefined &&
  (ctx.spec.metaColumns ?? []).length === 0 &&
  // Rendered rows are bytes: they cannot be split by value, nor cut at a row under max_file_size.
  ctx.spec.partition === undefined &&
  ctx.spec.maxFileSize === undefined &&
  !(ctx.gates?.needsValues ?? false) &&
  (work.track ?? []).length === 0

/** Opens the unit's result: rendered rows when allowed and the source can render them, batches otherwise. */
const openUnit = (ctx: UnitContext, work: UnitWork) =>
  mayRender(ctx, work)
    ? ctx.source.openRendered!(work.query, ctx.format.rendered!.dialect)
    : Effect.map(work.open ?? ctx.source.open(work.query), (result): RenderedOrBatches => ({ _tag: "Batches", result }))

/** The transform's output with the export's meta columns appended to its schema and to every batch. */
const withMeta = (
  ctx: UnitContext,
  work: UnitWork,
  transformed: { readonly schema: BatchSchema; readonly batches: Stream.Stream<Batch, RivetError> }
) => {
  if ((ctx.spec.metaColumns ?? []).length === 0) return Effect.succeed(transformed)
  const schema = withMetaColumns(ctx.spec, transformed.schema)
  if (schema instanceof ConfigError) return Effect.fail(schema)
  const append = metaColumnsAppender(ctx.spec, work.runStartedAt, schema)
  return Effect.succeed({ schema, batches: Stream.map(transformed.batches, append) })
}

/** What the unit's span tells: counts and where the time went (never a value of a row). */
const annotateUnit = (done: Pick<UnitOutcome, "stats" | "timings">) =>
  Effect.annotateCurrentSpan({
    "rivet.rows": done.stats.rows,
    "rivet.bytes": done.stats.bytes,
    "rivet.parts": done.stats.parts,
    "rivet.retries": done.stats.retries,
    "rivet.source_wait_ms": Math.round(done.timings.sourceWaitMs),
    "rivet.encode_ms": Math.round(done.timings.encodeMs),
    "rivet.upload_ms": Math.round(done.timings.uploadMs)
  })

/** How long the unit's encoder waited for the source, its uploader for encoded bytes. */
const makeClocks = Effect.gen(function* () {
  const sourceWait = yield* Ref.make(0)
  const encodePull = yield* Ref.make(0)
  const uploadWait = yield* Ref.make(0)
  /**
   * Fetch the next batch while this one is encoded, and encode while the previous part's bytes upload. Each slot
   * holds a whole batch (or an encoder's output for one: a CSV batch, a Parquet row group, a partitioned batch's
   * pieces — kept as one chunk, since Stream.buffer costs ~0.1 ms per element), so the capacities stay small: they
   * bound memory, and one slot is enough to keep both sides busy. The pulls on each side are timed.
   */
  const pipeline = <I>(
    input: Stream.Stream<I, RivetError>,
    encode: (input: Stream.Stream<I, RivetError>) => Stream.Stream<PartPiece, RivetError>
  ) => {
    const encoded = timedPulls(encode(timedPulls(Stream.buffer(input, { capacity: 1 }), sourceWait)), encodePull)
    return timedPulls(Stream.bufferChunks(encoded, { capacity: 1 }), uploadWait)
  }
  const timings = (startedAt: number, uploadStartedAt: number) =>
    Effect.gen(function* () {
      const end = yield* nowMs
      const waitedForSource = yield* Ref.get(sourceWait)
      return {
        sourceWaitMs: waitedForSource,
        encodeMs: Math.max(0, (yield* Ref.get(encodePull)) - waitedForSource),
        uploadMs: Math.max(0, end - uploadStartedAt - (yield* Ref.get(uploadWait))),
        totalMs: end - startedAt
      }
    })
  return { pipeline, timings }
})

/**
 * Runs one unit: opens the query, passes the batches through the program's transform, encodes them into parts
 * and uploads each part, counting into `meter` as it goes. The result (cursor, connection) closes as soon as its
 * last row is read, everything else it opens (uploads) with it; uploads still open when it fails or is interrupted
 * are aborted.
 */
export const runUnit = (ctx: UnitContext, meter: AttemptMeter, work: UnitWork): Effect.Effect<UnitOutcome, RivetError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const startedAt = yield* nowMs
      const clocks = yield* makeClocks
      // A table's data files go under its data/ folder, its metadata beside it.
      const dataPrefix = ctx.spec.tableFormat === undefined ? "" : TABLE_DATA_PREFIX
      const upload = (pieces: Stream.Stream<PartPiece, RivetError>, naming: PartNaming = { keyOf: work.keyOf }) =>
        Effect.flatMap(nowMs, (uploadStartedAt) =>
          uploadParts(pieces, {
            exportName: ctx.spec.name,
            sink: ctx.sink,
            contentType: ctx.format.contentType,
            keyOf: dataPrefix === "" ? naming.keyOf : (part) => `${dataPrefix}${naming.keyOf(part)}`,
            partitionOf: naming.partitionOf,
            retry: ctx.retry,
            onRetry: meter.count({ retries: 1 }),
            onCommitted: (part) =>
              Effect.zipRight(meter.count({ parts: 1 }), ctx.reporter.partCommitted?.(ctx.spec.name, part) ?? Effect.void).pipe(
                Effect.zipRight(naming.committed?.({ ...part, path: part.path.slice(dataPrefix.length) }) ?? Effect.void)
              ),
            onBytes: (count) => meter.count({ bytes: count }),
            onBegin: (key) => Effect.sync(() => ctx.uploads?.noteKey(key))
          }).pipe(
            Effect.flatMap((parts) =>
              Effect.all({ stats: meter.totals, timings: clocks.timings(startedAt, uploadStartedAt) }).pipe(
                Effect.map(({ stats, timings }) => ({ parts, rows: parts.reduce((sum, part) => sum + part.rows, 0), stats, timings }))
              )
            )
          )
        )
      // The result has a scope of its own, closed as soon as its last row is read rather than with the unit — and
      // uninterruptibly, as a scope always is: a close cut short would skip the finalizers after the one it was in
      // (the transaction's end), and the unit's own close of the result would find it closed already.
      const resultScope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      const opened = yield* Scope.extend(openUnit(ctx, work), resultScope)
      const afterLastRow = (read: () => SourceRead) =>
        Stream.execute(
          Effect.uninterruptible(
            Effect.zipRight(
              Scope.close(resultScope, Exit.void),
              Effect.suspend(() => work.onSourceEnd?.(read()) ?? Effect.void)
            )
          )
        )
      if (opened._tag === "Rendered") {
        const { schema } = opened
        yield* ctx.checkSchema(schema)
        yield* ctx.format.validate(schema)
        let sourceRows = 0
        const chunks = opened.chunks.pipe(
          Stream.tap((chunk) => Effect.zipRight(Effect.sync(() => (sourceRows += chunk.rows)), meter.count({ rows: chunk.rows }))),
          Stream.concat(afterLastRow(() => ({ sourceRows, last: [] })))
        )
        const pieces = clocks.pipeline(chunks, (input) =>
          encodeRenderedParts(input, ctx.format.rendered!.open(schema))
        )
        const uploaded = yield* upload(pieces)
        yield* annotateUnit(uploaded)
        return { ...uploaded, sourceRows, schema, last: [] }
      }
      const result = opened.result
      const tracker = yield* makeTracker(ctx, result.schema, work.track ?? [])
      let sourceRows = 0
      const observed = result.batches.pipe(
        Stream.tap((batch) =>
          Effect.zipRight(
            Effect.sync(() => {
              tracker.observe(batch)
              sourceRows += batch.rowCount
            }),
            meter.count({ rows: batch.rowCount })
          )
        ),
        Stream.concat(afterLastRow(() => ({ sourceRows, last: [...tracker.last] })))
      )
      const masked = yield* maskResult(ctx.spec, ctx.maskKey, keptColumns(work), { schema: result.schema, batches: observed })
      const personal = work.unit.index === 0 ? personalColumnsNotice(ctx.spec, masked.schema) : undefined
      if (personal !== undefined) yield* ctx.reporter.notice(ctx.spec.name, personal)
      const transformed = ctx.spec.transform ? ctx.spec.transform(masked) : masked
      const output = yield* withMeta(ctx, work, transformed)
      yield* ctx.checkSchema(output.schema)
      const cap = partCapFor(ctx, work, output.schema)
      const partitioned = ctx.spec.partition
        ? yield* partitionedUnit(ctx.spec.partition, output.schema, ctx.format, cap, work, ctx.spec.name)
        : undefined
      if (!partitioned) yield* ctx.format.validate(output.schema)
      const { gates } = ctx
      const observedByGates = gates
        ? output.batches.pipe(Stream.tap((batch) => Effect.sync(() => gates.observe(batch))))
        : output.batches
      const pieces = clocks.pipeline(observedByGates, (input) =>
        partitioned
          ? partitioned.encode(input)
          : encodeParts(input, ctx.format, output.schema, cap, { exportName: ctx.spec.name, runId: work.runId }, work.rowsPerPart)
      )
      const uploaded = yield* upload(pieces, partitioned?.naming)
      yield* annotateUnit(uploaded)
      return { ...uploaded, sourceRows, schema: output.schema, last: [...tracker.last] }
    })
  ).pipe(
    Effect.withSpan("Unit.run", {
      attributes: {
        "rivet.export": ctx.spec.name,
        "rivet.unit.kind": work.unit.kind,
        "rivet.unit.index": work.unit.index,
        "rivet.lane": ctx.lane ?? "main"
      }
    })
  )
