import { type BatchSchema, type LogicalType, valueAt } from "../../core/batch.js"
import { type ColumnData, isValid } from "../../core/columns/data.js"
import { ConfigError } from "../../core/errors.js"
import { keyText } from "../../core/key-text.js"
import { renderDate } from "../../core/temporal-text.js"
import type { PartitionColumn, PartitionGranularity, PartitionSpec } from "../../config/partition.js"
import type { PartitionKeys } from "./naming.js"
import { bucketCoder, type ColumnCoder, daysOfDates, hoursOfMicros, readingCoder, utf8Coder, type ValueReader } from "./codes.js"

const MICROS_PER_HOUR = 3_600_000_000n

/** `2024`, `2024-05`, `2024-05-17`, `2024-05-17T13` (UTC) for a day count and an hour of that day. */
export const truncatedText = (granularity: PartitionGranularity, days: number, hour: number): string => {
  const date = renderDate(days)
  switch (granularity) {
    case "year":
      return date.slice(0, -6)
    case "month":
      return date.slice(0, -3)
    case "day":
      return date
    case "hour":
      return `${date}T${String(hour).padStart(2, "0")}`
  }
}

const floorDiv = (value: bigint, by: bigint): bigint => {
  const quotient = value / by
  return value % by < 0n ? quotient - 1n : quotient
}

const utf8 = new TextDecoder()

/** A partition column's value per row (`read`) and per batch (`encode`, the same texts as codes). */
export interface PartitionReader {
  readonly read: ValueReader
  readonly encode: ColumnCoder
}

const truncatingReader = (type: LogicalType, granularity: PartitionGranularity): PartitionReader | undefined => {
  if (type.kind === "date" && granularity !== "hour") {
    const read: ValueReader = (column, row) =>
      isValid(column, row) && column.layout === "int32" ? truncatedText(granularity, column.values[row]!, 0) : null
    return { read, encode: bucketCoder(daysOfDates, (days) => truncatedText(granularity, days, 0), read) }
  }
  if (type.kind === "timestamp" || type.kind === "timestamptz") {
    const read: ValueReader = (column, row) => {
      if (!isValid(column, row) || column.layout !== "int64") return null
      const hours = floorDiv(column.values[row]!, MICROS_PER_HOUR)
      const days = floorDiv(hours, 24n)
      return truncatedText(granularity, Number(days), Number(hours - days * 24n))
    }
    const hourText = (hours: number) => {
      const days = Math.floor(hours / 24)
      return truncatedText(granularity, days, hours - days * 24)
    }
    // Below an hour, rows of one day share a text: they are bucketed by day, so a batch has fewer buckets.
    const bucketOf =
      granularity === "hour"
        ? hoursOfMicros
        : (column: ColumnData) => {
            const hoursAt = hoursOfMicros(column)
            return hoursAt && ((row: number) => {
              const hours = hoursAt(row)
              return hours === undefined ? undefined : Math.floor(hours / 24)
            })
          }
    return { read, encode: bucketCoder(bucketOf, granularity === "hour" ? hourText : (days) => truncatedText(granularity, days, 0), read) }
  }
  return undefined
}

const plainReader = (type: LogicalType): PartitionReader | undefined => {
  if (type.kind === "string") {
    const read: ValueReader = (column, row) =>
      isValid(column, row) && column.layout === "binary"
        ? utf8.decode(column.data.subarray(column.offsets[row]!, column.offsets[row + 1]!))
        : null
    return { read, encode: utf8Coder(readingCoder(read)) }
  }
  if (["list", "bytes", "json", "interval", "time"].includes(type.kind)) return undefined
  const read: ValueReader =
    type.kind === "bool"
      ? (column, row) => (isValid(column, row) ? String(valueAt(column, type, row)) : null)
      : (column, row) => keyText(type, valueAt(column, type, row)) ?? null
  return { read, encode: readingCoder(read) }
}

/** Routes rows of a result to partitions: the readers, and which columns the files keep. */
export interface PartitionLayout extends PartitionKeys {
  /** Per partition column: its index in the result and how its values read. */
  readonly readers: ReadonlyArray<PartitionReader & { readonly index: number }>
  /** The result's columns written into the files, by index. */
  readonly fileColumns: ReadonlyArray<number>
  readonly fileSchema: BatchSchema
}

const problem = (spec: PartitionSpec, index: number, message: string, hint: string) =>
  new ConfigError({ path: `${spec.path}[${index}]`, message, hint })

/** Checks `partition_by` against the result's schema (at run start) and builds the export's layout. */
export const partitionLayout = (spec: PartitionSpec, schema: BatchSchema): PartitionLayout | ConfigError => {
  const readers: Array<PartitionLayout["readers"][number]> = []
  for (const [i, entry] of spec.columns.entries()) {
    const index = schema.columns.findIndex((column) => column.name === entry.column)
    const named = `'${entry.column}${entry.granularity ? `:${entry.granularity}` : ""}'`
    if (index < 0)
      return problem(spec, i, `${named}: the result has no column '${entry.column}'`, `the result has: ${schema.columns.map((column) => column.name).join(", ")}`)
    const type = schema.columns[index]!.type
    const reader = entry.granularity ? truncatingReader(type, entry.granularity) : plainReader(type)
    if (reader === undefined)
      return entry.granularity
        ? problem(spec, i, `${named}: :${entry.granularity} needs a ${entry.granularity === "hour" ? "timestamp" : "date or timestamp"} column, '${entry.column}' is ${type.kind}`, `partition by '${entry.column}' itself, or by a temporal column`)
        : problem(spec, i, `${named}: a ${type.kind} column cannot name a directory`, "partition by a text, number, boolean, date or timestamp column")
    readers.push({ index, ...reader })
  }
  const dropped = new Set(spec.keepColumns ? [] : spec.columns.filter((entry: PartitionColumn) => entry.granularity === undefined).map((entry) => entry.column))
  const fileColumns = schema.columns.flatMap((column, index) => (dropped.has(column.name) ? [] : [index]))
  if (fileColumns.length === 0)
    return new ConfigError({ path: spec.path, message: "every column of the result is a partition column: the files would have none", hint: "set partition_keep_columns: true" })
  return {
    keys: spec.columns.map((entry) => entry.key),
    // Truncated temporal columns are never text; a plain one is when its type is.
    textual: readers.map(({ index }) => schema.columns[index]!.type.kind === "string"),
    readers,
    fileColumns,
    fileSchema: { columns: fileColumns.map((index) => schema.columns[index]!) }
  }
}
