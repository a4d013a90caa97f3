import * as Schema from "effect/Schema"

/**
 * The plan artifact of `rivet plan -o plan.json` and what `rivet run --plan` reads back. Plain JSON, snake_case
 * like manifest.json; decoded with these schemas, so a hand-edited plan that lost a field is refused with its path.
 */

export const PLAN_VERSION = 1 as const

/** How long a plan may be executed after it was made: data and statistics move on. */
export const PLAN_VALIDITY_MS = 24 * 60 * 60 * 1000

/** One chunk of a chunked export: an inclusive key range, or the rows whose key is NULL. */
export const ChunkSpec = Schema.Union(
  Schema.Struct({ low: Schema.String, high: Schema.String }),
  Schema.Struct({ nulls: Schema.Literal(true) })
)
export type ChunkSpec = typeof ChunkSpec.Type

const StoredCursor = Schema.Struct({ column: Schema.String, value: Schema.String, type: Schema.String })

/** Incremental: where the run starts and stops. */
const PlannedCursor = Schema.Struct({
  column: Schema.String,
  /** The cursor in state when the plan was made (`null`: none); `run --plan` refuses once it has moved. */
  stored: Schema.NullOr(StoredCursor),
  /** Rows with `column` greater than this are read (`null`: every row, the first run or a new cursor column). */
  after: Schema.NullOr(Schema.String),
  /** `cursor_lag`'s bound, computed when the plan was made: rows with `column` up to this (`null`: no lag). */
  until: Schema.NullOr(Schema.String)
})

/** time_window: the window computed when the plan was made. */
const PlannedWindow = Schema.Struct({ column: Schema.String, from: Schema.String, to: Schema.String })

/** Chunked: the chunk ranges, computed from the key's bounds exactly as a run computes them. */
const PlannedChunks = Schema.Struct({
  column: Schema.String,
  size: Schema.Number,
  count: Schema.Number,
  first: Schema.NullOr(ChunkSpec),
  last: Schema.NullOr(ChunkSpec),
  ranges: Schema.Array(ChunkSpec)
})

/** cdc: the change log the run reads, as the source showed it when the plan was made. */
const PlannedChanges = Schema.Struct({
  /** Null where the source keeps no reading position on the server (MySQL). */
  slot: Schema.NullOr(Schema.String),
  publication: Schema.NullOr(Schema.String),
  /** The published position the run continues after (`null`: the first run). */
  from: Schema.NullOr(Schema.String),
  /** The first run reads the table's rows on the slot's snapshot first. */
  snapshot: Schema.Boolean,
  slot_confirmed: Schema.NullOr(Schema.String),
  current: Schema.NullOr(Schema.String),
  /** WAL the server keeps for the slot: roughly what the run has to read. */
  pending_bytes: Schema.NullOr(Schema.Number)
})
/** Keyset: later pages start after the last key of the page before, so only the first statement is known. */
const PlannedPages = Schema.Struct({ key_columns: Schema.Array(Schema.String), page_size: Schema.Number })

/** What one export will do. */
export const PlannedExport = Schema.Struct({
  name: Schema.String,
  mode: Schema.String,
  /** What the plan depends on (query, mode keys, format, destination); `run --plan` refuses when it changed. */
  fingerprint: Schema.String,
  /** The source, password masked. */
  source: Schema.String,
  /** The statements, parameters inline: one per chunk; keyset: the first page's. */
  statements: Schema.Array(Schema.String),
  /**
   * The columns the export writes, with their logical types (meta columns included), as the source resolves them
   * for a run. Absent when the source cannot describe a query without running it.
   */
  columns: Schema.optional(Schema.Array(Schema.Struct({ name: Schema.String, type: Schema.String }))),
  /** From catalog statistics (`null`: unknown, e.g. a table never analyzed). */
  estimated_rows: Schema.NullOr(Schema.Number),
  cursor: Schema.optional(PlannedCursor),
  window: Schema.optional(PlannedWindow),
  chunks: Schema.optional(PlannedChunks),
  pages: Schema.optional(PlannedPages),
  changes: Schema.optional(PlannedChanges),
  /** Masked columns (`columns: { x: { mask: … } }`) and how each is masked. */
  masks: Schema.optional(Schema.Array(Schema.Struct({ column: Schema.String, method: Schema.String }))),
  /** `partition_by`: the directory keys, max_open_partitions, and the source's estimate of distinct partitions. */
  partitions: Schema.optional(
    Schema.Struct({
      by: Schema.Array(Schema.String),
      max_open: Schema.Number,
      estimated: Schema.NullOr(Schema.Number),
      estimate_covers: Schema.Array(Schema.String)
    })
  ),
  /** `table_format:`: the table the run commits to, its catalog, the snapshot it builds on and the operation. */
  table: Schema.optional(
    Schema.Struct({
      format: Schema.Literal("iceberg"),
      name: Schema.String,
      catalog: Schema.String,
      operation: Schema.Literal("append", "overwrite"),
      current_snapshot: Schema.NullOr(Schema.Number)
    })
  ),
  /** The destination root's URI. */
  destination: Schema.String,
  /** How the parts will be named, placeholders in braces: `orders_{YYYYMMDD}_{HHMMSS}_chunk{N}_{nonce}.parquet`. */
  naming: Schema.String,
  /** Defaults chosen for the user while planning (e.g. the chunk column). */
  notices: Schema.Array(Schema.String)
})
export type PlannedExport = typeof PlannedExport.Type

/** What a mode plans; the planner adds the notices it printed on the way. */
export type ModePlan = Omit<PlannedExport, "notices">

export const PlanFile = Schema.Struct({
  plan_version: Schema.Literal(PLAN_VERSION),
  created_at: Schema.String,
  expires_at: Schema.String,
  config: Schema.Struct({
    /** Absolute path of the config file. */
    path: Schema.String,
    /** Hex sha256 of the config file's bytes. */
    sha256: Schema.String
  }),
  exports: Schema.Array(PlannedExport)
})
export type PlanFile = typeof PlanFile.Type
