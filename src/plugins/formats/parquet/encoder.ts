import * as Effect from "effect/Effect"
import { type Batch, type BatchSchema, type ColumnData, formatLogicalType, type LogicalType } from "../../../core/batch.js"
import { describeCause, FormatError } from "../../../core/errors.js"
import type { PartEncoder, PartInfo } from "../../../core/plugin.js"
import { arrowSchemaEntry } from "./arrow-schema.js"
import { InvalidValue, prepareColumn, type PrepareColumn, sliceByteLength } from "./columns.js"
import type { Codec } from "./compressors.js"
import { parquetSchema } from "./schema.js"
import { ByteBuffer } from "./writer/bytes.js"
import { type ChunkSlice, PageScratch, writeColumnChunk } from "./writer/chunk.js"
import { type LeafPlan, leafPlan } from "./writer/leaf.js"
import { type KeyValue, type RowGroupMeta, writeFileMeta } from "./writer/metadata.js"
import { cappedGroups } from "./capped.js"

/** How parts are encoded: the codec and when a row group is complete. */
export interface EncoderSettings {
  readonly codec: Codec
  /** Rows per row group. */
  readonly rowGroupSize: number
  /** A row group also ends once its rows' estimated size reaches this (checked after each batch). */
  readonly rowGroupBytes: number
  /**
   * Gets each batch once its last rows are in a row group written out: the encoder reads the batch's buffers no
   * more (statistics keep copies), so the encoder thread can free them.
   */
  readonly release?: ((batch: Batch) => void) | undefined
  /**
   * Gets the decimal words a batch was parsed into (see `prepareColumn`) once the row group with its last rows is
   * written: the encoder's own, read no more, so the encoder thread can free them (they outlive young collections).
   */
  readonly releaseBuffers?: ((buffers: ReadonlyArray<ArrayBuffer>) => void) | undefined
  /** Where a part takes its working buffers from and gives them back when it ends (see `PartBuffersPool`). */
  readonly buffers?: PartBuffersPool | undefined
}

/** A part's working buffers: the bytes not yet handed on, and the scratch its pages are assembled in. */
interface PartBuffers {
  readonly out: ByteBuffer
  readonly scratch: PageScratch
}

const freshBuffers = (): PartBuffers => ({ out: new ByteBuffer(1 << 20), scratch: new PageScratch() })

/**
 * Keeps the working buffers of the last part that ended for the next part to open. They grow to a row group's size
 * over a part (the output buffer to the compressed row group, the page scratch to a page): a fresh set per part
 * left several MB of ArrayBuffers per part to the garbage collector, and a chunked export writes a part per chunk,
 * so its encoder thread ran a full collection about once per part. One set is kept, so the memory held between
 * parts stays that of one part; parts open at once (a partitioned export) take fresh sets beyond it.
 */
export class PartBuffersPool {
  private idle: PartBuffers | undefined

  take(): PartBuffers {
    const buffers = this.idle ?? freshBuffers()
    this.idle = undefined
    buffers.out.clear()
    return buffers
  }

  give(buffers: PartBuffers): void {
    this.idle ??= buffers
  }
}

const MAGIC = new TextEncoder().encode("PAR1")

const innermost = (type: LogicalType): LogicalType => (type.kind === "list" ? innermost(type.element) : type)

interface ColumnPlan {
  readonly name: string
  readonly prepare: PrepareColumn
  readonly leaf: LeafPlan
  readonly hint: string | undefined
}

const planColumn = (name: string, type: LogicalType): ColumnPlan => ({
  name,
  prepare: prepareColumn(type),
  leaf: leafPlan(name, type),
  hint:
    innermost(type).kind === "decimal"
      ? `override the column's type in the export's columns: block, e.g. ${name}: { type: decimal(38,10) }`
      : undefined
})

/** Rows `[from, to)` of a batch waiting for their row group, with its decimal columns parsed (see `prepareColumn`). */
interface Slice {
  readonly columns: ReadonlyArray<ColumnData>
  readonly words: ReadonlyArray<Uint32Array | undefined>
  readonly from: number
  readonly to: number
  /** The batch, on the slice holding its last rows. */
  readonly ends: Batch | undefined
}

const formatError = (message: string, hint?: string, quoted?: string): FormatError =>
  new FormatError({
    format: "parquet",
    message,
    ...(hint === undefined ? {} : { hint }),
    ...(quoted === undefined ? {} : { quoted: [quoted] })
  })

/**
 * The footer's key/value metadata: the Arrow schema (see arrow-schema.ts), the export and run the part belongs to,
 * and per column Rivet's logical type and the source's own type name (`numeric(12,2)`, an enum's name).
 */
export const footerMetadata = (schema: BatchSchema, part: PartInfo | undefined): Array<KeyValue> => [
  { key: "ARROW:schema", value: arrowSchemaEntry(schema) },
  ...(part === undefined
    ? []
    : [
        { key: "rivet.export", value: part.exportName },
        { key: "rivet.run_id", value: part.runId }
      ]),
  ...schema.columns.flatMap((column) => [
    { key: `rivet.column.${column.name}.logical_type`, value: formatLogicalType(column.type) },
    ...(column.sourceType === undefined ? [] : [{ key: `rivet.column.${column.name}.source_type`, value: column.sourceType }])
  ])
]

/**
 * A fresh encoder for one part. Rows are buffered until `rowGroupSize` of them (or `rowGroupBytes` of data)
 * are in, then one row group is encoded and its bytes returned; `finish` encodes the rest and the footer.
 * Throws if the writer cannot start.
 */
export const makePartEncoder = (schema: BatchSchema, settings: EncoderSettings, part?: PartInfo): PartEncoder => {
  const columns = schema.columns.map((column) => planColumn(column.name, column.type))
  const keyValues = footerMetadata(schema, part)
  const elements = parquetSchema(schema)
  const { codec } = settings
  const buffers = settings.buffers?.take() ?? freshBuffers()
  const { scratch } = buffers
  // The part's bytes not yet handed on (a row group, or the footer); `written` counts the bytes handed on before.
  const out = buffers.out
  out.append(MAGIC)
  let written = 0
  const rowGroups: Array<RowGroupMeta> = []
  // Rows wait as slices of the batches they came in (their buffers, no JS value per cell) until a row group is
  // complete; then each column chunk is encoded straight from those buffers.
  let pending: Array<Slice> = []
  let pendingRows = 0
  let pendingBytes = 0
  let rowsBefore = 0
  let state: "open" | "finished" | "failed" = "open"

  /** Encodes the pending rows as a row group at the end of `out` and returns its metadata (not yet recorded). */
  const encodeGroup = (): RowGroupMeta => {
    const fileOffset = written + out.length
    const chunks = columns.map((column, c) => {
      const slices: Array<ChunkSlice> = pending.map((slice) => ({
        column: slice.columns[c]!,
        words: slice.words[c],
        from: slice.from,
        to: slice.to
      }))
      return writeColumnChunk(out, written, column.leaf, slices, codec.codec, codec.compress, scratch)
    })
    return { columns: chunks, numRows: pendingRows, fileOffset }
  }

  const clearPending = () => {
    pending = []
    pendingRows = 0
    pendingBytes = 0
  }

  const commitGroup = (group: RowGroupMeta) => {
    rowGroups.push(group)
    for (const slice of pending) {
      if (slice.ends === undefined) continue
      settings.release?.(slice.ends)
      // Earlier slices of the batch share these words, and are in this group or an earlier one.
      settings.releaseBuffers?.(slice.words.flatMap((words) => (words === undefined ? [] : [words.buffer as ArrayBuffer])))
    }
    clearPending()
  }

  const writeGroup = () => commitGroup(encodeGroup())

  const drain = (): ReadonlyArray<Uint8Array> => {
    if (out.length === 0) return []
    const bytes = out.copy()
    written += out.length
    out.clear()
    return [bytes]
  }

  const writeFooterOf = (target: ByteBuffer, groups: ReadonlyArray<RowGroupMeta>) => {
    const footerStart = target.length
    writeFileMeta(target, {
      schema: elements,
      numRows: groups.reduce((sum, group) => sum + group.numRows, 0),
      rowGroups: groups,
      keyValues,
      createdBy: "rivet"
    })
    target.u32(target.length - footerStart)
    target.append(MAGIC)
  }
  const writeFooter = () => writeFooterOf(out, rowGroups)

  // `first`: the row of the batch that is the part's row `rowsBefore + 1` (a capped write continues a batch).
  const prepare = (batch: Batch, first = 0): ReadonlyArray<Uint32Array | undefined> =>
    columns.map((column, c) => {
      try {
        return column.prepare(batch.columns[c]!)
      } catch (error) {
        if (!(error instanceof InvalidValue)) throw error
        throw formatError(`column "${column.name}", row ${rowsBefore + error.row - first + 1} of the part: ${error.message}`, column.hint, error.message)
      }
    })

  const capped = cappedGroups({
    footerSize: (groups) => {
      const scratchFooter = new ByteBuffer(4096)
      writeFooterOf(scratchFooter, groups)
      return scratchFooter.length
    },
    rowGroups,
    settings,
    partBytes: () => written + out.length,
    encode: (batch, words, from, to) => {
      const mark = out.length
      pending = [{ columns: batch.columns, words, from, to, ends: to === batch.rowCount ? batch : undefined }]
      pendingRows = to - from
      const group = encodeGroup()
      return { group, bytes: out.length - mark }
    },
    commit: commitGroup,
    rollBack: (bytes) => {
      out.length -= bytes
      clearPending()
    }
  })

  const append = (batch: Batch) => {
    const words = prepare(batch)
    let from = 0
    while (from < batch.rowCount) {
      const to = Math.min(batch.rowCount, from + settings.rowGroupSize - pendingRows)
      pending.push({ columns: batch.columns, words, from, to, ends: to === batch.rowCount ? batch : undefined })
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
        return drain()
      })
    }),
    writeCapped: Effect.fn("ParquetEncoder.writeCapped")(function* (batch: Batch, from: number, maxBytes: number) {
      const problem = checkShape(batch)
      if (problem) return yield* Effect.fail(problem)
      return yield* step(() => {
        const rows = capped(batch, prepare(batch, from), from, maxBytes)
        rowsBefore += rows
        return { bytes: drain(), rows }
      })
    }),
    finish: Effect.withSpan(
      step(() => {
        if (pendingRows > 0) writeGroup()
        writeFooter()
        state = "finished"
        pending = []
        const last = drain()
        // The output is a copy: the buffers are free for the next part.
        settings.buffers?.give(buffers)
        return last
      }),
      "ParquetEncoder.finish"
    )
  }
}
