import type { Batch, BatchSchema } from "../../core/batch.js"
import { type ColumnData, isValid } from "../../core/columns/data.js"

const validityOf = (column: ColumnData, rows: ArrayLike<number>, count: number): { validity: Uint8Array | undefined; nullCount: number } => {
  if (column.validity === undefined || column.nullCount === 0) return { validity: undefined, nullCount: 0 }
  const validity = new Uint8Array((count + 7) >>> 3)
  let nullCount = 0
  for (let i = 0; i < count; i++) {
    if (isValid(column, rows[i]!)) validity[i >>> 3]! |= 1 << (i & 7)
    else nullCount++
  }
  return nullCount === 0 ? { validity: undefined, nullCount } : { validity, nullCount }
}

/** Copies ranges `[offsets[r], offsets[r + 1])` of the selected rows: new offsets and the indexes they cover. */
const gatherRanges = (offsets: Int32Array, rows: ArrayLike<number>, count: number) => {
  const out = new Int32Array(count + 1)
  for (let i = 0; i < count; i++) out[i + 1] = out[i]! + offsets[rows[i]! + 1]! - offsets[rows[i]!]!
  return out
}

/** The selected rows of one column, in the order given: fresh buffers in the same layout. */
export const takeColumn = (column: ColumnData, rows: ArrayLike<number>, count: number): ColumnData => {
  const { validity, nullCount } = validityOf(column, rows, count)
  const base = { length: count, nullCount, validity }
  switch (column.layout) {
    case "bool": {
      const values = new Uint8Array((count + 7) >>> 3)
      for (let i = 0; i < count; i++) {
        const row = rows[i]!
        if ((column.values[row >>> 3]! & (1 << (row & 7))) !== 0) values[i >>> 3]! |= 1 << (i & 7)
      }
      return { ...base, layout: "bool", values }
    }
    case "fixed": {
      const data = new Uint8Array(count * column.width)
      for (let i = 0; i < count; i++) data.set(column.data.subarray(rows[i]! * column.width, (rows[i]! + 1) * column.width), i * column.width)
      return { ...base, layout: "fixed", width: column.width, data }
    }
    case "binary": {
      const offsets = gatherRanges(column.offsets, rows, count)
      const data = new Uint8Array(offsets[count]!)
      for (let i = 0; i < count; i++) data.set(column.data.subarray(column.offsets[rows[i]!]!, column.offsets[rows[i]! + 1]!), offsets[i]!)
      return { ...base, layout: "binary", offsets, data }
    }
    case "list": {
      const offsets = gatherRanges(column.offsets, rows, count)
      const children = new Int32Array(offsets[count]!)
      let at = 0
      for (let i = 0; i < count; i++) for (let child = column.offsets[rows[i]!]!; child < column.offsets[rows[i]! + 1]!; child++) children[at++] = child
      return { ...base, layout: "list", offsets, child: takeColumn(column.child, children, children.length) }
    }
    default: {
      const source = column.values
      const values = new (source.constructor as { new (length: number): typeof source })(count)
      for (let i = 0; i < count; i++) values[i] = source[rows[i]!]!
      return { ...base, layout: column.layout, values } as ColumnData
    }
  }
}

/** The selected rows (`rows[0..count)`) of the selected columns of a batch, as a batch of `schema`. */
export const takeRows = (batch: Batch, schema: BatchSchema, columns: ReadonlyArray<number>, rows: ArrayLike<number>, count: number): Batch => ({
  schema,
  columns: columns.map((index) => takeColumn(batch.columns[index]!, rows, count)),
  rowCount: count
})

/** The selected columns of a whole batch (no copy). */
export const projectColumns = (batch: Batch, schema: BatchSchema, columns: ReadonlyArray<number>): Batch =>
  columns.length === batch.columns.length ? batch : { schema, columns: columns.map((index) => batch.columns[index]!), rowCount: batch.rowCount }
