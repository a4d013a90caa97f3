import type { ColumnDecoder } from "../decode.js"
import type { ColumnPlan } from "../types.js"

/**
 * Appends a row image's value, as the binary log library decodes it, to the batch read's decoder of its column
 * (decode.ts), so a change row comes out exactly as that read would export it. The library is set up for exact
 * values (connection options in reader.ts): integers beyond 2^53 and decimals arrive as text, dates and times as text
 * in UTC, JSON as its text, binary strings and BIT as bytes; the rest as numbers.
 */
export const appendValue = (decoder: ColumnDecoder, plan: ColumnPlan, value: unknown): void => {
  if (value === null || value === undefined) return decoder.appendNull()
  if (Buffer.isBuffer(value)) return decoder.append(value)
  if (typeof value === "string") return decoder.appendValue(value)
  if (typeof value === "number") {
    // The library reads YEAR as 1900 + the stored byte; the zero year 0000 is stored as 0.
    if (plan.sourceType === "year" && value === 1900) return decoder.appendValue(0)
    return decoder.appendValue(Object.is(value, -0) ? "-0" : value)
  }
  if (typeof value === "bigint" || typeof value === "boolean") return decoder.appendValue(String(value))
  // A parsed JSON document (a server whose JSON the library read without `jsonStrings`): its text.
  return decoder.appendValue(JSON.stringify(value))
}
