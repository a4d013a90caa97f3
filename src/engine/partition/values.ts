import { type BatchSchema, type LogicalType, valueAt } from "../../core/batch.js"
import { type ColumnData, isValid } from "../../core/columns/data.js"
import { ConfigError } from "../../core/errors.js"
import { keyText } from "../../core/key-text.js"
import { renderDate } from "../../core/temporal-text.js"
import type { PartitionColumn, PartitionGranularity, PartitionSpec } from "../../config/partition.js"

/** The partition value of one row of a column: text, or null for SQL NULL. */
export type ValueReader = (column: ColumnData, row: number) => string | null

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

const truncatingReader = (type: LogicalType, granularity: PartitionGranularity): ValueReader | undefined => {
  if (type.kind === "date" && granularity !== "hour")
    return (column, row) => (isValid(column, row) && column.layout === "int32" ? truncatedText(granularity, column.values[row]!, 0) : null)
  if (type.kind === "timestamp" || type.kind === "timestamptz")
    return (column, row) => {
      if (!isValid(column, row) || column.layout !== "int64") return null
      const hours = floorDiv(column.values[row]!, MICROS_PER_HOUR)
      const days = floorDiv(hours, 24n)
      return truncatedText(granularity, Number(days), Number(hours - days * 24n))
    }
  return undefined
}

const plainReader = (type: LogicalType): ValueReader | undefined => {
  if (type.kind === "string")
    return (column, row) =>
      isValid(column, row) && column.layout === "binary"
        ? utf8.decode(column.data.subarray(column.offsets[row]!, column.offsets[row + 1]!))
        : null
  if (type.kind === "bool") return (column, row) => (isValid(column, row) ? String(valueAt(column, type, row)) : null)
  if (["list", "bytes", "json", "interval", "time"].includes(type.kind)) return undefined
  return (column, row) => keyText(type, valueAt(column, type, row)) ?? null
}

/** Routes rows of a result to partitions: the readers, and which columns the files keep. */
export interface PartitionLayout {
  readonly keys: ReadonlyArray<string>
  /** Per partition column: its index in the result and how its values read. */
  readonly readers: ReadonlyArray<{ readonly index: number; readonly read: ValueReader }>
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
    const read = entry.granularity ? truncatingReader(type, entry.granularity) : plainReader(type)
    if (read === undefined)
      return entry.granularity
        ? problem(spec, i, `${named}: :${entry.granularity} needs a ${entry.granularity === "hour" ? "timestamp" : "date or timestamp"} column, '${entry.column}' is ${type.kind}`, `partition by '${entry.column}' itself, or by a temporal column`)
        : problem(spec, i, `${named}: a ${type.kind} column cannot name a directory`, "partition by a text, number, boolean, date or timestamp column")
    readers.push({ index, read })
  }
  const dropped = new Set(spec.keepColumns ? [] : spec.columns.filter((entry: PartitionColumn) => entry.granularity === undefined).map((entry) => entry.column))
  const fileColumns = schema.columns.flatMap((column, index) => (dropped.has(column.name) ? [] : [index]))
  if (fileColumns.length === 0)
    return new ConfigError({ path: spec.path, message: "every column of the result is a partition column: the files would have none", hint: "set partition_keep_columns: true" })
  return { keys: spec.columns.map((entry) => entry.key), readers, fileColumns, fileSchema: { columns: fileColumns.map((index) => schema.columns[index]!) } }
}
