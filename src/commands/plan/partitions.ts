import * as Effect from "effect/Effect"
import type { PartitionSpec } from "../../config/partition.js"
import { baseQuery, type ExportContext } from "../../engine/modes/context.js"

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


/** The export's partitions as planned, and the notice when more are expected than may be open at once. */
export const planPartitions = (ctx: ExportContext, spec: PartitionSpec) =>
  Effect.gen(function* () {
    const plain = spec.columns.filter((entry) => entry.granularity === undefined).map((entry) => entry.column)
    const estimate =
      ctx.source.estimateRows && plain.length > 0
        ? yield* Effect.orElseSucceed(ctx.source.estimateRows({ ...baseQuery(ctx.spec), distinct: plain }), () => undefined)
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
