import type { ColumnPlan } from "../types.js"

/**
 * A row image's value as the binary log library decodes it, turned into the bytes the text protocol gives for the
 * same value, so a change row goes through the batch read's own decoders (decode.ts) and comes out exactly as that
 * read would export it. The library is set up for exact values (connection options in reader.ts): integers beyond
 * 2^53 and decimals arrive as text, dates and times as text in UTC, JSON as its text, binary strings and BIT as bytes.
 */
export const valueBytes = (plan: ColumnPlan, value: unknown): Buffer | null => {
  if (value === null || value === undefined) return null
  if (Buffer.isBuffer(value)) return value
  if (typeof value === "string") return Buffer.from(value, "utf8")
  if (typeof value === "number") {
    // The library reads YEAR as 1900 + the stored byte; the zero year 0000 is stored as 0.
    if (plan.sourceType === "year" && value === 1900) return Buffer.from("0")
    return Buffer.from(String(value))
  }
  if (typeof value === "bigint" || typeof value === "boolean") return Buffer.from(String(value))
  // A parsed JSON document (a server whose JSON the library read without `jsonStrings`): its text.
  return Buffer.from(JSON.stringify(value), "utf8")
}
