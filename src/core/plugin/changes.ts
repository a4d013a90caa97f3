import type * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { Batch, BatchSchema, LogicalType } from "../batch.js"
import type { SourceError } from "../errors.js"
import type { RowFilter } from "./row-filter.js"

/**
 * Change data capture, an optional capability of a source (`SourceDriverShape.changes`): the changes of a table as
 * batches, read from the database's change log from a published position to a target, with nothing confirmed to the
 * database until the engine says the changes are published (`confirm`).
 */

/**
 * A position in the source's change log, as text whose order is the log's order (PostgreSQL: the commit LSN,
 * zero-padded: `00000016/B374D848`). Opaque to the engine, which stores it after publishing.
 */
export type ChangePosition = string

/** An export reading a shared resource (a slot) with others, as they see it. */
export interface SharedReader {
  readonly exportName: string
  /** Completes once that export's run has ended: it will not open its feed any more (the others go on without it). */
  readonly ended: Effect.Effect<void>
}

/** What one export asks of the change log. */
export interface ChangeRequest {
  readonly exportName: string
  readonly table: { readonly schema?: string | undefined; readonly name: string }
  /** The source's name for the export's reading position (PostgreSQL: the replication slot). */
  readonly slot: string
  /** The source's name for the set of tables logged for it (PostgreSQL: the publication). */
  readonly publication: string
  /**
   * The id the export reads the log under as a replica (MySQL: `cdc.server_id`, unique among the server's
   * replicas); absent when the config gives none (a source that needs one says so).
   */
  readonly serverId?: number | undefined
  /**
   * When several exports of the config read the same `slot`: their names, this one's included, in config order.
   * The source reads the log once for all of them once each has opened its feed (their runs go side by side), and
   * each feed has its own table's changes; requests of one slot agree on everything but the export, table, `from`
   * and column types. Absent: the export reads the slot alone.
   */
  readonly readers?: ReadonlyArray<SharedReader> | undefined
  /** Continue after this published position; absent on the first run, which starts the log. */
  readonly from?: ChangePosition | undefined
  /** First run: the table's rows as they were when the log started come first (`__op = snapshot`), then the changes. */
  readonly snapshot: boolean
  /**
   * The snapshot read in pieces, `parallel` at a time, each its own statement on its own connection reading the
   * log's starting snapshot; each piece's rows meet all of its filters, and every row is in one piece. Absent: one
   * statement.
   */
  readonly snapshotPieces?: { readonly filters: ReadonlyArray<ReadonlyArray<RowFilter>>; readonly parallel: number } | undefined
  /**
   * `true`: stop at the first transaction boundary at or past the log's position when the feed opened. `false`:
   * keep reading until `maxEvents`, `windowMs` or `stop` ends the feed (at a transaction boundary, each of them).
   */
  readonly untilCurrent: boolean
  /** Without `untilCurrent`: end at the first transaction boundary this long after the feed opened (or when idle). */
  readonly windowMs?: number | undefined
  /** Ends the feed at the next transaction boundary (at once when between transactions). */
  readonly stop?: AbortSignal | undefined
  /** Stop at the first transaction boundary after this many changes (snapshot rows not counted). */
  readonly maxEvents?: number | undefined
  readonly batchSize: number
  readonly columnTypes: ReadonlyMap<string, LogicalType>
}

/** Why a feed's batches ended. */
export type FeedEnd =
  | { readonly _tag: "Current" }
  | { readonly _tag: "MaxEvents" }
  | { readonly _tag: "Window" }
  | { readonly _tag: "SchemaChanged"; readonly detail: string }
  | { readonly _tag: "Stopped" }

/** An open feed: the batches of whole transactions, then where they ended. */
export interface ChangeFeed {
  /** The change columns (`__op`, `__pos`, `__seq`, `__commit_ts`, `__txid`, `__unchanged`) then the table's. */
  readonly schema: BatchSchema
  /** Where the feed started: the published position, or on the first run the log's starting point. */
  readonly from: ChangePosition
  readonly batches: Stream.Stream<Batch, SourceError>
  /**
   * Once `batches` ended: the position to publish (every change up to it is in the batches, none after it) and why
   * it ended. Fails when read before the end.
   */
  readonly reached: Effect.Effect<{ readonly position: ChangePosition; readonly end: FeedEnd }, SourceError>
}

/** What the source knows of an export's change log, for `rivet doctor` and `rivet plan`. */
export interface ChangeLogStatus {
  /** Server settings and rights the change log needs; each `ok` or not, with what to do. */
  readonly checks: ReadonlyArray<{ readonly name: string; readonly ok: boolean; readonly detail: string; readonly hint?: string | undefined }>
  /** The export's slot, if it exists: its confirmed position and the log the server keeps for it. */
  readonly slot?:
    | {
        readonly name: string
        readonly active: boolean
        readonly confirmed?: ChangePosition | undefined
        /** Bytes of log the server retains for the slot (what an abandoned slot costs in disk). */
        readonly retainedBytes?: number | undefined
      }
    | undefined
  /** The log's current position. */
  readonly current?: ChangePosition | undefined
  /**
   * False when the source keeps no reading position on the server (MySQL: a replica holds none; the published
   * position lives in the state alone, and `slot` means nothing). Default true (a PostgreSQL slot).
   */
  readonly positionOnServer?: boolean | undefined
  /**
   * The columns a feed opened now would write — the source's change columns, then the table's — as `ChangeFeed.schema`
   * (for `rivet plan`); absent when the source cannot tell (the table is missing, a column cannot be read).
   */
  readonly schema?: BatchSchema | undefined
}

export interface SourceChanges {
  /**
   * Opens the export's feed in the caller's scope (closing it ends the log connection): creates what the first run
   * needs (slot, publication), reads the snapshot when asked, then the changes after `from`. Confirms nothing
   * beyond `from`.
   */
  readonly open: (request: ChangeRequest) => Effect.Effect<ChangeFeed, SourceError, Scope.Scope>
  /** Tells the database that every change up to `position` is published: it may release the log before it. */
  readonly confirm: (request: ChangeRequest, position: ChangePosition) => Effect.Effect<void, SourceError>
  readonly inspect: (request: ChangeRequest) => Effect.Effect<ChangeLogStatus, SourceError>
  /** Removes the export's reading position from the database (`rivet state reset`); false when there was none. */
  readonly drop: (request: ChangeRequest) => Effect.Effect<boolean, SourceError>
}
