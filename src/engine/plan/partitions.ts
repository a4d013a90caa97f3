import * as Effect from "effect/Effect"
import type { PartitionSpec } from "../../config/partition.js"
import type { SourceQuery } from "../../core/plugin.js"
import { baseQuery, type ExportContext } from "../modes/context.js"

/** What `rivet plan` says of a partitioned export. */
export interface PlannedPartitions {
  readonly by: ReadonlyArray<string>
  readonly max_open: number
  /**
   * The source's estimate of distinct values of the plain (untruncated) partition columns together (PostgreSQL:
   * EXPLAIN of SELECT DISTINCT, from pg_stats n_distinct); null when unknown or when every column is truncated.
   */
  readonly estimated: number | null
  /** The columns `estimated` counts; truncated ones multiply it by the periods the rows span (no statistics for them). */
  readonly estimate_covers: ReadonlyArray<string>
}

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`

/**
 * `SELECT DISTINCT` of the partition values over the export's query, in PostgreSQL's SQL: its EXPLAIN row count is
 * the planner's estimate from the columns' n_distinct (no rows are read). Other sources are not asked.
 */
const distinctQuery = (columns: ReadonlyArray<string>, base: SourceQuery): SourceQuery => ({
  ...base,
  sql: `SELECT DISTINCT ${columns.map(quote).join(", ")} FROM (${base.sql}) AS _rivet_partitions`,
  table: undefined
})

/** The export's partitions as planned, and the notice when more are expected than may be open at once. */
export const planPartitions = (ctx: ExportContext, spec: PartitionSpec) =>
  Effect.gen(function* () {
    const plain = spec.columns.filter((entry) => entry.granularity === undefined).map((entry) => entry.column)
    const estimate =
      ctx.source.label === "Postgres" && ctx.source.estimateRows && plain.length > 0
        ? yield* Effect.orElseSucceed(ctx.source.estimateRows(distinctQuery(plain, baseQuery(ctx.spec))), () => undefined)
        : undefined
    const planned: PlannedPartitions = {
      by: spec.columns.map((entry) => entry.key),
      max_open: spec.maxOpen,
      estimated: estimate ?? null,
      estimate_covers: estimate === undefined ? [] : plain
    }
    const notice =
      estimate !== undefined && estimate > spec.maxOpen
        ? `${spec.path}: about ${estimate} distinct values of ${plain.join(", ")}${plain.length < spec.columns.length ? " (times the periods of the truncated columns)" : ""}, more than max_open_partitions (${spec.maxOpen}): unless rows arrive grouped by partition, parts are closed and reopened (more, smaller files); raise max_open_partitions (memory: one open part per partition) or order the query by the partition columns`
        : undefined
    return { planned, notice }
  })
