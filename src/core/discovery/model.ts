import type { LogicalType } from "../batch.js"

/**
 * What a source reports about its tables for `rivet init`. Source-neutral: the source does the catalog work
 * (and the type mapping its exports use); the runtime turns this into a commented config.
 */

/** A column the export cannot write as it is, and the `columns:` override that makes it run. */
export interface ColumnProblem {
  /** `precision`: a number without declared precision (the override picks one); `type`: no lossless logical type. */
  readonly kind: "precision" | "type"
  /** Why, as the source reports it when the override is missing (e.g. "numeric has no declared precision …"). */
  readonly reason: string
  /** The override written to `columns:`, e.g. `decimal(38,9)` or `string`. */
  readonly override: string
  /** A query the user can run to choose a better override (precision problems), in the source's dialect. */
  readonly check?: string | undefined
}

export interface DiscoveredColumn {
  readonly name: string
  /** The type as the source names it, e.g. `numeric(12,2)`, `point`. */
  readonly sourceType: string
  /** The logical type a plain export writes; absent when there is a problem. */
  readonly type?: LogicalType | undefined
  readonly problem?: ColumnProblem | undefined
}

/** How the row count was obtained: catalog statistics, an exact count (small tables), or the planner's guess. */
export type EstimateSource = "statistics" | "count" | "planner"

export interface DiscoveredTable {
  readonly schema: string
  readonly name: string
  readonly estimatedRows: number
  readonly estimateSource: EstimateSource
  readonly columns: ReadonlyArray<DiscoveredColumn>
  /** Primary key column names in key order; empty when the table has none. */
  readonly primaryKey: ReadonlyArray<string>
}

/** A table left out of the generated config, and why (e.g. no SELECT privilege). */
export interface SkippedTable {
  readonly schema: string
  readonly name: string
  readonly reason: string
}

export interface Discovery {
  /** The `source.type` of the generated config, e.g. `postgres`. */
  readonly sourceType: string
  /** The masked connection URL, for the header comment. */
  readonly displaySource: string
  readonly tables: ReadonlyArray<DiscoveredTable>
  readonly skipped: ReadonlyArray<SkippedTable>
  /** The schema an unqualified `table:` resolves to (written without it); default `public`. */
  readonly defaultSchema?: string | undefined
  /** Quotes an identifier in the source's SQL, for the queries the config suggests; default `"name"`. */
  readonly quoteIdentifier?: ((name: string) => string) | undefined
}
