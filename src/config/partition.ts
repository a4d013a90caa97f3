import * as Schema from "effect/Schema"
import { ConfigError } from "../core/errors.js"

/** How a temporal partition column is truncated (UTC). */
export type PartitionGranularity = "year" | "month" | "day" | "hour"

/** One entry of `partition_by:`: a result column, truncated to a granularity when one is given. */
export interface PartitionColumn {
  readonly column: string
  readonly granularity?: PartitionGranularity | undefined
  /**
   * The directory key: the column's name, or `{column}_{granularity}` for a truncated one — Hive readers let a
   * directory key replace a file column of the same name, which would hide the exact value behind its truncation.
   */
  readonly key: string
}

/** `partition_by:` and its companions, decoded (docs/partitioning.md). */
export interface PartitionSpec {
  readonly columns: ReadonlyArray<PartitionColumn>
  /** Whether plain partition columns stay inside the files too (truncated ones always stay). */
  readonly keepColumns: boolean
  /** Partitions with an open part at most at once; the least recently used is closed when another is needed. */
  readonly maxOpen: number
  /** `exports[i].partition_by`, for errors found once the result's schema is known. */
  readonly path: string
}

export const DEFAULT_MAX_OPEN_PARTITIONS = 64

const ENTRY = /^([A-Za-z_][A-Za-z0-9_$]*)(?::(year|month|day|hour))?$/

export const PartitionFields = {
  partition_by: Schema.optional(
    Schema.Array(
      Schema.String.pipe(
        Schema.pattern(ENTRY, {
          message: () => "must be a column name, optionally with :year, :month, :day or :hour (e.g. created_at:month)"
        })
      )
    ).annotations({
      description:
        "Write Hive-style directories {column}={value}/ by these result columns, in order; a temporal column may be truncated (UTC) with :year, :month, :day or :hour, giving {column}_{granularity}={value}/ (docs/partitioning.md)."
    })
  ),
  partition_keep_columns: Schema.optional(
    Schema.Boolean.annotations({
      description:
        "Keep the partition_by columns inside the files as well (default false, as DuckDB's PARTITION_BY: readers take them from the directory names). Truncated columns are always kept."
    })
  ),
  max_open_partitions: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 10_000, { message: () => "must be a whole number from 1 to 10000" })).annotations({
      description:
        "Partitions with an open part at most at once (default 64); when another is needed the least recently used part is committed, and a later row for it opens a new _part{N}."
    })
  )
}

interface PartitionInput {
  readonly partition_by?: ReadonlyArray<string> | undefined
  readonly partition_keep_columns?: boolean | undefined
  readonly max_open_partitions?: number | undefined
}

/** The export's partitioning, or the problems of its keys; `destinationType` refuses one without directories. */
export const partitionOf = (
  input: PartitionInput,
  path: string,
  destinationType: string | undefined
): { readonly spec?: PartitionSpec | undefined; readonly problems: ReadonlyArray<ConfigError> } => {
  const problems: Array<ConfigError> = []
  const entries = input.partition_by
  if (entries === undefined) {
    for (const key of ["partition_keep_columns", "max_open_partitions"] as const) {
      if (input[key] !== undefined)
        problems.push(new ConfigError({ path: `${path}.${key}`, message: "has no effect without partition_by", hint: "add partition_by: [column] or remove it" }))
    }
    return { problems }
  }
  if (entries.length === 0) problems.push(new ConfigError({ path: `${path}.partition_by`, message: "lists no column", hint: "e.g. partition_by: [country, created_at:month]" }))
  if (destinationType === "stdout")
    problems.push(
      new ConfigError({
        path: `${path}.partition_by`,
        message: "the stdout destination has no directories to partition into",
        hint: "write to a local or s3 destination, or remove partition_by"
      })
    )
  const columns: Array<PartitionColumn> = []
  entries.forEach((entry, index) => {
    const match = ENTRY.exec(entry)
    if (!match) return
    const column = match[1]!
    const granularity = match[2] as PartitionGranularity | undefined
    const key = granularity === undefined ? column : `${column}_${granularity}`
    if (columns.some((other) => other.key === key))
      problems.push(new ConfigError({ path: `${path}.partition_by[${index}]`, message: `'${entry}' is listed twice`, hint: "list each partition once" }))
    else columns.push({ column, granularity, key })
  })
  if (problems.length > 0) return { problems }
  return {
    spec: {
      columns,
      keepColumns: input.partition_keep_columns ?? false,
      maxOpen: input.max_open_partitions ?? DEFAULT_MAX_OPEN_PARTITIONS,
      path: `${path}.partition_by`
    },
    problems
  }
}

/**
 * Whether every part name carries its number (`_part{N}`, `_p{i}`): with `max_file_size`, and with `partition_by`,
 * where a partition closed to make room opens a new part when a later row comes for it.
 */
export const numbersEveryPart = (spec: { readonly maxFileSize?: number | undefined; readonly partition?: PartitionSpec | undefined }): boolean =>
  spec.maxFileSize !== undefined || spec.partition !== undefined
