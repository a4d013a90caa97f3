import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type Batch, type BatchSchema, valueAt } from "../batch.js"
import { encodeParts, encodeRenderedParts, type PartPiece } from "../encode-parts.js"
import { type RivetError, SourceError } from "../errors.js"
import { keyText } from "../key-text.js"
import type { PartRecord } from "../manifest.js"
import type { RenderedOrBatches, SourceQuery } from "../plugin.js"
import { uploadParts } from "../upload-parts.js"
import type { ExportContext } from "./context.js"

/** What running a unit needs of the export's context — also built by chunk worker threads (src/runtime/lanes). */
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
  /** Source columns whose last non-NULL value (in result order) the unit reports, as source text. */
  readonly track?: ReadonlyArray<string> | undefined
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

/** Remembers the last non-NULL value of some columns as batches pass by. */
const makeTracker = (ctx: UnitContext, schema: BatchSchema, columns: ReadonlyArray<string>) => {
  const indexes = columns.map((name) => schema.columns.findIndex((column) => column.name === name))
  const missing = columns.filter((_, i) => indexes[i]! < 0)
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
  const last: Array<string | undefined> = columns.map(() => undefined)
  const observe = (batch: Batch) => {
    indexes.forEach((index, i) => {
      const column = batch.columns[index]!
      const type = schema.columns[index]!.type
      for (let row = column.length - 1; row >= 0; row--) {
        const value = valueAt(column, type, row)
        if (value === null) continue
        last[i] = keyText(type, value)
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
  !(ctx.gates?.needsValues ?? false) &&
  (work.track ?? []).length === 0

/** Opens the unit's result: rendered rows when allowed and the source can render them, batches otherwise. */
const openUnit = (ctx: UnitContext, work: UnitWork) =>
  mayRender(ctx, work)
    ? ctx.source.openRendered!(work.query, ctx.format.rendered!.dialect)
    : Effect.map(ctx.source.open(work.query), (result): RenderedOrBatches => ({ _tag: "Batches", result }))

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
      const output = ctx.spec.transform
        ? ctx.spec.transform({ schema: result.schema, batches: observed })
        : { schema: result.schema, batches: observed }
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
