import { type Batch, type BatchSchema, valueAt } from "../../core/batch.js"
import { keyText } from "../../core/key-text.js"
import { formatBytes } from "../../core/size.js"
import { takeColumn } from "../partition/take.js"
import type { PartCap } from "../encode-parts.js"
import type { UnitWork } from "./unit.js"
import type { UnitContext } from "./unit-context.js"

/**
 * The columns that name a row in a notice: the unit's sort key (keyset pages), its chunk column, or the export's
 * configured key or cursor column — those present in the written schema. Empty: rows are named by number.
 */
const keyColumns = (ctx: UnitContext, work: UnitWork, schema: BatchSchema): ReadonlyArray<number> => {
  const byQuery = (work.query.orderBy ?? []).flatMap((ref) => (typeof ref === "string" ? [ref] : []))
  const byRange = (work.query.where ?? []).flatMap((filter) => (filter._tag === "Between" ? [filter.column] : []))
  for (const names of [byQuery, byRange, ctx.spec.mode.rowKeyColumns]) {
    const indexes = names.map((name) => schema.columns.findIndex((column) => column.name === name))
    if (names.length > 0 && indexes.every((index) => index >= 0)) return indexes
  }
  return []
}

/**
 * How a notice names a batch's rows: `key id=42` (the key's columns, copied: the batch's buffers may move to the
 * encoder thread), else `row 1234 of chunk 3` (from 1).
 */
const rowNamer = (schema: BatchSchema, keys: ReadonlyArray<number>, unit: string) => (batch: Batch) => {
  if (keys.length === 0) return (_index: number, unitRow: number) => `row ${unitRow} of the ${unit}`
  const all = Int32Array.from({ length: batch.rowCount }, (_, row) => row)
  const kept = keys.map((column) => ({ column: schema.columns[column]!, data: takeColumn(batch.columns[column]!, all, all.length) }))
  return (index: number) =>
    `key ${kept
      .map(({ column, data }) => {
        const value = valueAt(data, column.type, index)
        return `${column.name}=${value === null ? "NULL" : (keyText(column.type, value) ?? String(value))}`
      })
      .join(", ")}`
}

/**
 * The unit's cap on a part's size (`max_file_size`), undefined without one: a row larger than the cap on its own is
 * written alone in its part and reported as a notice naming the export and the row.
 */
export const partCapFor = (ctx: UnitContext, work: UnitWork, schema: BatchSchema): PartCap | undefined => {
  const maxBytes = ctx.spec.maxFileSize
  if (maxBytes === undefined) return undefined
  const keys = keyColumns(ctx, work, schema)
  const unit = work.unit.kind === "query" ? "export's rows" : `${work.unit.kind} ${work.unit.index}`
  return {
    maxBytes,
    rowNamer: rowNamer(schema, keys, unit),
    oversized: (row) =>
      ctx.reporter.notice(
        ctx.spec.name,
        `a single row (${row.row}) is larger than max_file_size (${formatBytes(maxBytes)}): ` +
          `it was written alone in a part of ${formatBytes(row.bytes)}`
      )
  }
}
