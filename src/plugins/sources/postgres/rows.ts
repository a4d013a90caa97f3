import { formatLogicalType, type Value } from "../../../core/batch.js"
import { DecodeFailure } from "./decode.js"
import type { ColumnPlan } from "./types.js"

/**
 * Rows of PostgreSQL text values (`null` for SQL NULL), in result-column order. The source reads binary COPY now
 * (binary-fields.ts); this text path stays as the reference its values are tested against
 * (test/plugins/sources/postgres/binary-vs-text.test.ts): the server's text rendering through the text decoders.
 */
export type TextRows = ReadonlyArray<ReadonlyArray<string | null>>

/**
 * Turns fetched rows into columns, one tight loop per column with its decoder. Throws `DecodeFailure` naming the
 * column when a value cannot be represented.
 */
export const decodeColumns = (plans: ReadonlyArray<ColumnPlan>, rows: TextRows): Array<Array<Value>> => {
  const rowCount = rows.length
  const columns: Array<Array<Value>> = new Array(plans.length)
  for (let c = 0; c < plans.length; c++) {
    const plan = plans[c]!
    const decode = plan.decode
    const out: Array<Value> = new Array(rowCount)
    try {
      if (decode === undefined) {
        for (let r = 0; r < rowCount; r++) out[r] = rows[r]![c] ?? null
      } else {
        for (let r = 0; r < rowCount; r++) {
          const text = rows[r]![c]
          out[r] = text === null || text === undefined ? null : decode(text)
        }
      }
    } catch (cause) {
      const reason = cause instanceof DecodeFailure ? cause.message : String(cause)
      throw new DecodeFailure(
        `column "${plan.name}" (${plan.sourceType} → ${formatLogicalType(plan.type)}): ${reason}`,
        cause instanceof DecodeFailure ? cause.hint : undefined
      )
    }
    columns[c] = out
  }
  return columns
}
