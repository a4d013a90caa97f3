import type * as Effect from "effect/Effect"
import type { BatchSchema } from "../../core/batch.js"
import type { PartRecord } from "../../core/manifest.js"
import type * as Scope from "effect/Scope"
import type { SourceError } from "../../core/errors.js"
import type { ColumnRef, SourceQuery, SourceResult } from "../../core/plugin.js"
import type { UnitTimings } from "../telemetry/metrics.js"
import type { UnitStats } from "../unit-stats.js"

/** One statement's worth of work: the whole export in single-runner modes, a chunk, or a keyset page. */
export interface UnitWork {
  /** Which unit this is: the whole query, a chunk or a page, and its number (spans and metrics). */
  readonly unit: { readonly kind: "query" | "chunk" | "page"; readonly index: number }
  readonly query: SourceQuery
  /** Opens the unit's batches some other way than `source.open(query)` (a change feed); `query` then only names them. */
  readonly open?: Effect.Effect<SourceResult, SourceError, Scope.Scope> | undefined
  /** Parts hold at most this many rows. */
  readonly rowsPerPart?: number | undefined
  /** The key of the unit's part N. */
  readonly keyOf: (part: number) => string
  /** The run the unit belongs to (formats may record it in each part). */
  readonly runId: string
  /** When the run started: the value of the `exported_at` meta column. */
  readonly runStartedAt: Date
  /**
   * Source columns (or coalesced columns) whose last non-NULL value (in result order) the unit reports, as source
   * text.
   */
  readonly track?: ReadonlyArray<ColumnRef> | undefined
  /**
   * Runs once the unit's last row is read and its result closed (its connection given back), while its last part
   * may still be encoded and written: the caller may start reading the next unit meanwhile. Not run when the unit
   * fails before that, nor when a transform stops reading early.
   */
  readonly onSourceEnd?: ((read: SourceRead) => Effect.Effect<void>) | undefined
}

/** What a unit had read when its source ended. */
export interface SourceRead {
  readonly sourceRows: number
  /** The tracked columns' last non-NULL values, in `track` order. */
  readonly last: ReadonlyArray<string | undefined>
}

export interface UnitOutcome {
  readonly parts: ReadonlyArray<PartRecord>
  /** Rows written (after the program's transform, if any). */
  readonly rows: number
  /** Rows read from the source. */
  readonly sourceRows: number
  readonly schema: BatchSchema
  /** The tracked columns' last non-NULL values, in `track` order. */
  readonly last: ReadonlyArray<string | undefined>
  /** What the attempt did: the rows, bytes and parts it wrote and the sink calls it retried. */
  readonly stats: UnitStats
  /** Where its time went. */
  readonly timings: UnitTimings
}
