import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type Batch, type BatchSchema, type Value, valueAt } from "../../core/batch.js"
import { encodeParts, encodeRenderedParts, type PartPiece } from "../encode-parts.js"
import { ConfigError, type RivetError, SourceError } from "../../core/errors.js"
import { keyText } from "../../core/key-text.js"
import type { PartRecord } from "../../core/manifest.js"
import { metaColumnsAppender, withMetaColumns } from "../meta-columns.js"
import type { ColumnRef, RenderedOrBatches, SourceQuery } from "../../core/plugin.js"
import { uploadParts } from "../upload-parts.js"
import type { ExportContext } from "./context.js"

/** What running a unit needs of the export's context — also built by chunk worker threads (src/engine/lanes). */
export type UnitContext = Pick<
  ExportContext,
  "spec" | "source" | "format" | "sink" | "reporter" | "progress" | "retry" | "gates" | "checkSchema" | "uploads"
>

/** One statement's worth of work: the whole export in single-runner modes, a chunk, or a keyset page. */
export interface UnitWork {
  readonly query: SourceQuery
  /** The key of the unit's part N. */
  readonly keyOf: (part: number) => string
  /** The run the unit belongs to (formats may record it in each part). */
  readonly runId: string
  /** When the run started: the value of the `exported_at` meta column. */
  readonly runStartedAt: Date
  /**
   * Source columns (or coalesced columns) whose last non-NULL value (in result order) the unit reports, as source
   * text.
   */
  readonly track?: ReadonlyArray<ColumnRef> | undefined
}

export interface UnitOutcome {
  readonly parts: ReadonlyArray<PartRecord>
  /** Rows written (after the program's transform, if any). */
  readonly rows: number
  /** Rows read from the source. */
  readonly sourceRows: number
  readonly schema: BatchSchema
  /** The tracked columns' last non-NULL values, in `track` order. */
  readonly last: ReadonlyArray<string | undefined>
}

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

/**
 * Whether the unit may read rows the source rendered in the format's dialect (PostgreSQL's COPY … CSV): only when
 * nothing needs the values — no transform, no quality gate reading values, no tracked cursor column.
 */
const mayRender = (ctx: UnitContext, work: UnitWork): boolean =>
  ctx.format.rendered !== undefined &&
  ctx.source.openRendered !== undefined &&
  ctx.spec.transform === undefined &&
  (ctx.spec.metaColumns ?? []).length === 0 &&
  !(ctx.gates?.needsValues ?? false) &&
  (work.track ?? []).length === 0

/** Opens the unit's result: rendered rows when allowed and the source can render them, batches otherwise. */
const openUnit = (ctx: UnitContext, work: UnitWork) =>
  mayRender(ctx, work)
    ? ctx.source.openRendered!(work.query, ctx.format.rendered!.dialect)
    : Effect.map(ctx.source.open(work.query), (result): RenderedOrBatches => ({ _tag: "Batches", result }))

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

/**
 * Runs one unit: opens the query, passes the batches through the program's transform, encodes them into parts
 * and uploads each part. Everything it opens (cursor, connection, uploads) closes with it; uploads still open when
 * it fails or is interrupted are aborted.
 */
export const runUnit = (ctx: UnitContext, work: UnitWork): Effect.Effect<UnitOutcome, RivetError> =>
  Effect.scoped(
    Effect.gen(function* () {
      const { progress } = ctx
      const upload = (pieces: Stream.Stream<PartPiece, RivetError>) =>
        uploadParts(pieces, {
          sink: ctx.sink,
          contentType: ctx.format.contentType,
          keyOf: work.keyOf,
          retry: ctx.retry,
          onRetry: () => {
            progress.retries++
          },
          onCommitted: (part) => {
            progress.parts++
            // Reporters write synchronously (a line on stderr); the callback runs inside the upload stream.
            if (ctx.reporter.partCommitted) Effect.runSync(ctx.reporter.partCommitted(ctx.spec.name, part))
          },
          onBytes: (count) => {
            progress.bytes += count
          },
          onBegin: (key) => ctx.uploads?.noteKey(key)
        })
      const opened = yield* openUnit(ctx, work)
      if (opened._tag === "Rendered") {
        const { schema } = opened
        yield* ctx.checkSchema(schema)
        yield* ctx.format.validate(schema)
        let sourceRows = 0
        const chunks = opened.chunks.pipe(
          Stream.tap((chunk) =>
            Effect.sync(() => {
              sourceRows += chunk.rows
              progress.rows += chunk.rows
            })
          ),
          Stream.buffer({ capacity: 1 })
        )
        const pieces = encodeRenderedParts(chunks, ctx.format.rendered!.open(schema), ctx.spec.maxFileSize).pipe(
          Stream.buffer({ capacity: 2 })
        )
        const parts = yield* upload(pieces)
        return { parts, rows: parts.reduce((sum, part) => sum + part.rows, 0), sourceRows, schema, last: [] }
      }
      const result = opened.result
      const tracker = yield* makeTracker(ctx, result.schema, work.track ?? [])
      let sourceRows = 0
      const observed = result.batches.pipe(
        Stream.tap((batch) =>
          Effect.sync(() => {
            tracker.observe(batch)
            sourceRows += batch.rowCount
            progress.rows += batch.rowCount
          })
        )
      )
      const transformed = ctx.spec.transform
        ? ctx.spec.transform({ schema: result.schema, batches: observed })
        : { schema: result.schema, batches: observed }
      const output = yield* withMeta(ctx, work, transformed)
      yield* ctx.checkSchema(output.schema)
      yield* ctx.format.validate(output.schema)
      const { gates } = ctx
      // Fetch the next batch while this one is encoded, and encode while the previous part bytes upload. Each slot
      // holds a whole batch (or an encoder's output for one: a CSV batch, a Parquet row group), so the capacities
      // stay small: they bound memory, and one slot is enough to keep both sides busy.
      const batches = (gates ? output.batches.pipe(Stream.tap((batch) => Effect.sync(() => gates.observe(batch)))) : output.batches).pipe(
        Stream.buffer({ capacity: 1 })
      )
      const pieces = encodeParts(batches, ctx.format, output.schema, ctx.spec.maxFileSize, {
        exportName: ctx.spec.name,
        runId: work.runId
      }).pipe(
        Stream.buffer({ capacity: 2 })
      )
      const parts = yield* upload(pieces)
      return {
        parts,
        rows: parts.reduce((sum, part) => sum + part.rows, 0),
        sourceRows,
        schema: output.schema,
        last: [...tracker.last]
      }
    })
  )
