import * as Effect from "effect/Effect"
import { ByteWriter, type ColumnSource, ParquetWriter } from "hyparquet-writer"
import { type Batch, type BatchSchema, columnValues, type LogicalType } from "../../runtime/batch.js"
import { describeCause, FormatError } from "../../runtime/errors.js"
import type { PartEncoder } from "../../runtime/plugin.js"
import { type AppendColumn, appendColumn, InvalidValue } from "./columns.js"
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
  readonly append: AppendColumn
  readonly hint: string | undefined
  // Min/max of JSON are whole documents (never truncated) and help no reader: keep them out of the footer.
  readonly statistics: boolean
  // hyparquet-writer's dictionary keys values with a Map, which folds -0 into 0: floats stay PLAIN.
  readonly encoding: ColumnSource["encoding"]
}

const planColumn = (name: string, type: LogicalType): ColumnPlan => ({
  name,
  append: appendColumn(type),
  hint:
    innermost(type).kind === "decimal"
      ? `override the column's type in the export's columns: block, e.g. ${name}: { type: decimal(38,10) }`
      : undefined,
  statistics: innermost(type).kind !== "json",
  encoding: innermost(type).kind === "float32" || innermost(type).kind === "float64" ? "PLAIN" : undefined
})

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
  let pending: Array<Array<unknown>> = columns.map(() => [])
  let pendingRows = 0
  let pendingBytes = 0
  let rowsBefore = 0
  let state: "open" | "finished" | "failed" = "open"

  const writeGroup = () => {
    const columnData = columns.map((column, c): ColumnSource => ({
      name: column.name,
      data: pending[c]!,
      statistics: column.statistics,
      ...(column.encoding === undefined ? {} : { encoding: column.encoding })
    }))
    const rows = pendingRows
    pending = columns.map(() => [])
    pendingRows = 0
    pendingBytes = 0
    parquet.write({ columnData, rowGroupSize: rows })
  }

  const append = (batch: Batch) => {
    let from = 0
    const values = batch.columns.map((data, c) => columnValues(data, batch.schema.columns[c]!.type))
    while (from < batch.rowCount) {
      const to = Math.min(batch.rowCount, from + settings.rowGroupSize - pendingRows)
      for (let c = 0; c < columns.length; c++) {
        const column = columns[c]!
        try {
          pendingBytes += column.append(values[c]!, from, to, pending[c]!)
        } catch (error) {
          if (!(error instanceof InvalidValue)) throw error
          throw formatError(
            `column "${column.name}", row ${rowsBefore + error.row + 1} of the part: ${error.message}`,
            column.hint
          )
        }
      }
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
