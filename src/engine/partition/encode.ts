import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import type { Batch } from "../../core/batch.js"
import type { FormatError } from "../../core/errors.js"
import type { FormatDriverShape, PartInfo } from "../../core/plugin.js"
import { type CappedPart, closeCapped, type PartCap, type PartPiece, writeCapped } from "../encode-parts.js"
import { LruOpen } from "./lru.js"
import { partitionDirectoryOf } from "./naming.js"
import { projectColumns, takeRows } from "./take.js"
import type { PartitionLayout } from "./values.js"

/** Where a part of a partitioned unit goes: its directory and the partition values it holds. */
export interface PartitionOfPart {
  readonly directory: string
  readonly values: Readonly<Record<string, string | null>>
}

type OpenPart = CappedPart

/**
 * One batch's rows grouped by partition, groups in order of first appearance: rows of group g are
 * `order[start[g]..start[g + 1])`, its values `values[g]`. Each partition column is coded per batch (codes.ts);
 * a tuple of codes gets its group one column at a time — the group of the first c columns and the code of the next
 * — so every key is a small whole number, however many columns and whatever characters their values hold.
 */
export const groupRows = (batch: Batch, layout: PartitionLayout) => {
  const rowCount = batch.rowCount
  const [first, ...rest] = layout.readers.map(({ index, encode }) => encode(batch.columns[index]!, rowCount))
  let ids = first!.codes
  let values: Array<ReadonlyArray<string | null>> = first!.texts.map((text) => [text])
  for (const column of rest) {
    const next = new Int32Array(rowCount)
    const byPair = new Map<number, number>()
    const tuples: Array<ReadonlyArray<string | null>> = []
    const width = column.texts.length
    for (let r = 0; r < rowCount; r++) {
      const pair = ids[r]! * width + column.codes[r]!
      let id = byPair.get(pair)
      if (id === undefined) {
        id = tuples.length
        byPair.set(pair, id)
        tuples.push([...values[ids[r]!]!, column.texts[column.codes[r]!]!])
      }
      next[r] = id
    }
    ids = next
    values = tuples
  }
  const start = new Int32Array(values.length + 1)
  for (let r = 0; r < rowCount; r++) start[ids[r]! + 1]!++
  for (let g = 0; g < values.length; g++) start[g + 1]! += start[g]!
  const order = new Int32Array(rowCount)
  const next = start.slice(0, values.length)
  for (let r = 0; r < rowCount; r++) order[next[ids[r]!]!++] = r
  return { values, start, order }
}

/**
 * Encodes a unit's batches into parts per partition. Each batch's rows are grouped by their partition values
 * and each group goes to its partition's open part; at most `maxOpen` parts are open at once — the least recently
 * used is finished (its `end` emitted, so the uploader commits it) before another opens, and a later row for it
 * opens a new part. Part numbers are unique within the unit; `partitionOf` tells a part's directory until the
 * part is released (after its commit), so nothing is kept per partition once its parts are closed.
 */
export const makePartitionedEncoder = (
  format: FormatDriverShape,
  layout: PartitionLayout,
  maxOpen: number,
  cap: PartCap | undefined,
  info?: PartInfo
) => {
  const parts = new Map<number, PartitionOfPart>()
  const encode = <E, R>(batches: Stream.Stream<Batch, E, R>): Stream.Stream<PartPiece, E | FormatError, R> => Stream.suspend(() => {
    const open = new LruOpen<OpenPart>(maxOpen)
    const directoryOf = partitionDirectoryOf(layout)
    let nextPart = 0
    let unitRows = 0

    const emit = (current: OpenPart, chunks: ReadonlyArray<Uint8Array>, out: Array<PartPiece>) => {
      for (const bytes of chunks) {
        if (bytes.length === 0) continue
        current.bytes += bytes.length
        out.push({ _tag: "bytes", part: current.part, bytes })
      }
    }

    const close = (current: OpenPart, out: Array<PartPiece>) =>
      cap !== undefined
        ? closeCapped(current, cap, out)
        : Effect.map(current.encoder.finish, (chunks) => {
            emit(current, chunks, out)
            out.push({ _tag: "end", part: current.part, rows: current.rows })
          })

    const partFor = (directory: string, values: ReadonlyArray<string | null>, out: Array<PartPiece>) =>
      Effect.gen(function* () {
        const existing = open.use(directory)
        if (existing) return existing
        const evicted = open.evictFor()
        if (evicted) yield* close(evicted[1], out)
        const part = nextPart++
        parts.set(part, { directory, values: Object.fromEntries(layout.keys.map((key, i) => [key, values[i] ?? null])) })
        const opened: OpenPart = { encoder: yield* format.open(layout.fileSchema, info), part, bytes: 0, rows: 0 }
        open.add(directory, opened)
        return opened
      })

    const onBatch = (batch: Batch) =>
      Effect.gen(function* () {
        const out: Array<PartPiece> = []
        if (batch.rowCount === 0) return out
        const before = unitRows
        unitRows += batch.rowCount
        const { values, start, order } = groupRows(batch, layout)
        const namer = cap?.rowNamer(batch)
        for (let g = 0; g < values.length; g++) {
          const directory = directoryOf(values[g]!)
          const count = start[g + 1]! - start[g]!
          const whole = values.length === 1
          const rows = whole
            ? projectColumns(batch, layout.fileSchema, layout.fileColumns)
            : takeRows(batch, layout.fileSchema, layout.fileColumns, order.subarray(start[g]!, start[g + 1]!), count)
          if (cap !== undefined && namer !== undefined) {
            const first = start[g]!
            yield* writeCapped(
              rows,
              cap,
              format.extension,
              (index) => {
                const row = whole ? index : order[first + index]!
                return namer(row, before + row + 1)
              },
              () => undefined,
              () => partFor(directory, values[g]!, out),
              () => open.delete(directory),
              out
            )
            continue
          }
          const current = yield* partFor(directory, values[g]!, out)
          emit(current, yield* current.encoder.write(rows), out)
          current.rows += count
        }
        return out
      })

    const closeAll = Effect.suspend(() => {
      const out: Array<PartPiece> = []
      return Effect.as(Effect.forEach(open.drain(), ([, current]) => close(current, out), { discard: true }), out)
    })

    return batches.pipe(Stream.mapEffect(onBatch), Stream.concat(Stream.fromEffect(closeAll)), Stream.flattenIterables)
  })
  return {
    encode,
    partitionOf: (part: number): PartitionOfPart | undefined => parts.get(part),
    release: (part: number): void => void parts.delete(part)
  }
}
