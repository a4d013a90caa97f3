import * as Effect from "effect/Effect"
import { ByteWriter, type ColumnSource, ParquetWriter } from "hyparquet-writer"
import type { Batch, BatchSchema, ColumnData, LogicalType } from "../../runtime/batch.js"
import { describeCause, FormatError } from "../../runtime/errors.js"
import type { PartEncoder } from "../../runtime/plugin.js"
import { type AppendColumn, appendColumn, InvalidValue, prepareColumn, type PrepareColumn, sliceByteLength } from "./columns.js"
import type { Codec } from "./compressors.js"
import { parquetSchema } from "./schema.js"

/** How parts are encoded: the codec and when a row group is complete. */
export interface EncoderSettings {
  readonly codec: Codec
  /** Rows per row group. */
  readonly rowGroupSize: number
  /** A row group also ends once its rows' estimated size reaches this (checked after each batch). */
  readonly rowGroupBytes: number
}

/**
 * The writer's output buffer. hyparquet-writer calls `flush` after every row group; the bytes are copied
 * out (the buffer is reused) and wait in `chunks` until the encoder hands them on. The buffer itself keeps
 * the size of the largest row group.
 */
class ChunkWriter extends ByteWriter {
  private chunks: Array<Uint8Array> = []

  flush(): void {
    if (this.index === 0) return
    this.chunks.push(new Uint8Array(this.buffer.slice(0, this.index)))
    this.index = 0
  }

  override finish(): void {
    this.flush()
  }

  drain(): ReadonlyArray<Uint8Array> {
    this.flush()
    const chunks = this.chunks
    this.chunks = []
    return chunks
  }
}

const INITIAL_BUFFER_BYTES = 1 << 20

const innermost = (type: LogicalType): LogicalType => (type.kind === "list" ? innermost(type.element) : type)

interface ColumnPlan {
  readonly name: string
  readonly prepare: PrepareColumn
  readonly append: AppendColumn
  readonly hint: string | undefined
  // Min/max of JSON are whole documents (never truncated) and help no reader: keep them out of the footer.
  readonly statistics: boolean
  // hyparquet-writer's dictionary keys values with a Map, which folds -0 into 0: floats stay PLAIN.
  readonly encoding: ColumnSource["encoding"]
}

const planColumn = (name: string, type: LogicalType): ColumnPlan => ({
  name,
  prepare: prepareColumn(type),
  append: appendColumn(type),
  hint:
    innermost(type).kind === "decimal"
      ? `override the column's type in the export's columns: block, e.g. ${name}: { type: decimal(38,10) }`
      : undefined,
  statistics: innermost(type).kind !== "json",
  encoding: innermost(type).kind === "float32" || innermost(type).kind === "float64" ? "PLAIN" : undefined
})

/** Rows `[from, to)` of a batch waiting for their row group, with its decimal columns parsed (see `prepareColumn`). */
interface Slice {
  readonly columns: ReadonlyArray<ColumnData>
  readonly words: ReadonlyArray<Uint32Array | undefined>
  readonly from: number
  readonly to: number
}

/**
 * The writer keeps each row group's min/max until the footer; for byte columns they are views of a batch's
 * buffer, which would keep every batch's bytes alive until the part ends. Each becomes a copy of its own.
 */
const detachStatistics = (group: ParquetWriter["row_groups"][number] | undefined): void => {
  for (const chunk of group?.columns ?? []) {
    const statistics = chunk.meta_data?.statistics
    if (statistics === undefined) continue
    if (statistics.min_value instanceof Uint8Array) statistics.min_value = statistics.min_value.slice()
    if (statistics.max_value instanceof Uint8Array) statistics.max_value = statistics.max_value.slice()
  }
}

const jsValues = (slices: ReadonlyArray<Slice>, c: number, append: AppendColumn): Array<unknown> => {
  const out: Array<unknown> = []
  for (const slice of slices) append(slice.columns[c]!, slice.words[c], slice.from, slice.to, out)
  return out
}

/**
 * A column of 32-bit-or-narrower numbers without NULLs goes in as one typed array: the values the writer would
 * read from a JS array, without a slot (or a boxed double) per value.
 */
const typedValues = (slices: ReadonlyArray<Slice>, c: number, rows: number): Int16Array | Int32Array | Float32Array | Float64Array | undefined => {
  const first = slices[0]?.columns[c]
  if (first === undefined) return undefined
  const layout = first.layout
  if (layout !== "int16" && layout !== "int32" && layout !== "float32" && layout !== "float64") return undefined
  for (const slice of slices) if (slice.columns[c]!.nullCount !== 0 || slice.columns[c]!.layout !== layout) return undefined
  const out =
    layout === "int16" ? new Int16Array(rows) : layout === "int32" ? new Int32Array(rows) : layout === "float32" ? new Float32Array(rows) : new Float64Array(rows)
  let at = 0
  for (const slice of slices) {
    const data = slice.columns[c]!
    if (data.layout !== layout) return undefined
    out.set(data.values.subarray(slice.from, slice.to), at)
    at += slice.to - slice.from
  }
  return out
}

const formatError = (message: string, hint?: string): FormatError =>
  new FormatError(hint === undefined ? { format: "parquet", message } : { format: "parquet", message, hint })

/**
 * A fresh encoder for one part. Rows are buffered until `rowGroupSize` of them (or `rowGroupBytes` of data)
 * are in, then one row group is encoded and its bytes returned; `finish` encodes the rest and the footer.
 * Throws if the writer cannot start.
 */
export const makePartEncoder = (schema: BatchSchema, settings: EncoderSettings): PartEncoder => {
  const columns = schema.columns.map((column) => planColumn(column.name, column.type))
  const writer = new ChunkWriter(INITIAL_BUFFER_BYTES)
  const parquet = new ParquetWriter({
    writer,
    schema: parquetSchema(schema),
    codec: settings.codec.codec,
    compressors: settings.codec.compressors,
    createdBy: "rivet"
  })
  // Rows wait as slices of the batches they came in (their buffers, no JS value per cell) until a row group is
  // complete; only then is each column turned into the values hyparquet-writer takes, one column at a time.
  let pending: Array<Slice> = []
  let pendingRows = 0
  let pendingBytes = 0
  let rowsBefore = 0
  let state: "open" | "finished" | "failed" = "open"

  const columnSource = (c: number, rows: number): ColumnSource => {
    const column = columns[c]!
    const slices = pending
    // hyparquet-writer reads `length`, then `slice`s each column once per row group: building the values only
    // there keeps one column's values alive at a time instead of the whole group's.
    const data = {
      length: rows,
      slice: () => typedValues(slices, c, rows) ?? jsValues(slices, c, column.append)
    }
    return {
      name: column.name,
      data: data as unknown as ColumnSource["data"],
      statistics: column.statistics,
      ...(column.encoding === undefined ? {} : { encoding: column.encoding })
    }
  }

  const writeGroup = () => {
    const rows = pendingRows
    const columnData = columns.map((_, c) => columnSource(c, rows))
    pending = []
    pendingRows = 0
    pendingBytes = 0
    parquet.write({ columnData, rowGroupSize: rows })
    detachStatistics(parquet.row_groups.at(-1))
  }

  const prepare = (batch: Batch): ReadonlyArray<Uint32Array | undefined> =>
    columns.map((column, c) => {
      try {
        return column.prepare(batch.columns[c]!)
      } catch (error) {
        if (!(error instanceof InvalidValue)) throw error
        throw formatError(`column "${column.name}", row ${rowsBefore + error.row + 1} of the part: ${error.message}`, column.hint)
      }
    })

  const append = (batch: Batch) => {
    const words = prepare(batch)
    let from = 0
    while (from < batch.rowCount) {
      const to = Math.min(batch.rowCount, from + settings.rowGroupSize - pendingRows)
      pending.push({ columns: batch.columns, words, from, to })
      for (const data of batch.columns) pendingBytes += sliceByteLength(data, from, to)
      pendingRows += to - from
      from = to
      if (pendingRows >= settings.rowGroupSize || pendingBytes >= settings.rowGroupBytes) writeGroup()
    }
    rowsBefore += batch.rowCount
  }

  const checkShape = (batch: Batch): FormatError | undefined => {
    if (batch.columns.length !== columns.length) {
      return formatError(`a batch has ${batch.columns.length} columns, but the part was opened with ${columns.length}`)
    }
    const short = batch.columns.findIndex((data) => data.length !== batch.rowCount)
    return short < 0
      ? undefined
      : formatError(`column "${columns[short]!.name}" of a batch does not have ${batch.rowCount} values`)
  }

  /** Runs one step; any failure leaves the part unusable, so later calls fail too. */
  const step = <A>(run: () => A): Effect.Effect<A, FormatError> =>
    Effect.suspend(() => {
      if (state !== "open") {
        return Effect.fail(formatError(`this Parquet part is ${state === "finished" ? "already finished" : "broken by an earlier error"}`))
      }
      return Effect.try({
        try: run,
        catch: (error) => {
          state = "failed"
          return error instanceof FormatError
            ? error
            : formatError(`could not encode a Parquet row group: ${describeCause(error)}`)
        }
      })
    })

  return {
    write: Effect.fn("ParquetEncoder.write")(function* (batch: Batch) {
      const problem = checkShape(batch)
      if (problem) return yield* Effect.fail(problem)
      return yield* step(() => {
        append(batch)
        return writer.drain()
      })
    }),
    finish: Effect.withSpan(
      step(() => {
        if (pendingRows > 0) writeGroup()
        parquet.finish()
        state = "finished"
        pending = []
        return writer.drain()
      }),
      "ParquetEncoder.finish"
    )
  }
}
