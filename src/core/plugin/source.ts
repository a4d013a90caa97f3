import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { Batch, BatchSchema, LogicalType } from "../batch.js"
import type { RivetError, SourceError } from "../errors.js"
import type { SourceDiscovery } from "../discovery/discovery.js"
import type { SourceChanges } from "./changes.js"
import { type Definition, PLUGIN_API_VERSION, type PluginBase, type PluginContext } from "./base.js"
import type { ColumnRef, RowFilter } from "./row-filter.js"

export type { ColumnRef, RowFilter } from "./row-filter.js"

export type { DiscoverRequest, SourceDiscovery } from "../discovery/discovery.js"

/**
 * What an export reads before a mode narrows it: a table, which the source writes as `SELECT * FROM` it in its own
 * quoting (`"schema"."table"`, `` `db`.`table` ``), or the user's query, run as written.
 */
export type QueryBase =
  | { readonly _tag: "Table"; readonly schema?: string | undefined; readonly name: string }
  | { readonly _tag: "Query"; readonly sql: string }

/** The table an export names (for catalog details such as numeric precision or the primary key), if it names one. */
export const tableOf = (query: Pick<SourceQuery, "base">): Extract<QueryBase, { _tag: "Table" }> | undefined =>
  query.base._tag === "Table" ? query.base : undefined

/** What one export asks of a source. */
export interface SourceQuery {
  readonly exportName: string
  /**
   * The export's base: a table or a query. The source renders it in its dialect; with `where`, `orderBy`, `limit` or
   * `distinct` it wraps it: `SELECT * FROM (<base>) AS _rivet WHERE … ORDER BY … LIMIT n`.
   */
  readonly base: QueryBase
  /** Conditions, all of which a row must meet. */
  readonly where?: ReadonlyArray<RowFilter> | undefined
  /** Output columns (or coalesced columns) to sort by, ascending. */
  readonly orderBy?: ReadonlyArray<ColumnRef> | undefined
  readonly limit?: number | undefined
  /**
   * Set on a keyset page: `orderBy` is a unique, non-NULL key of the rows, so the source may read the rows in pieces,
   * each continuing after the last key the one before read (on the same snapshot), instead of in one statement.
   */
  readonly uniqueOrder?: boolean | undefined
  /**
   * Only the distinct values of these output columns (`SELECT DISTINCT …`): asked of `estimateRows` for the number
   * of partitions a run will write. A source that cannot render it answers `undefined`.
   */
  readonly distinct?: ReadonlyArray<string> | undefined
  /** Rows fetched per round trip and per batch. */
  readonly batchSize: number
  /** Logical type overrides from the export's `columns:` block, by column name. */
  readonly columnTypes: ReadonlyMap<string, LogicalType>
}

/** An open result: its schema is known before the first row is read. */
export interface SourceResult {
  readonly schema: BatchSchema
  readonly batches: Stream.Stream<Batch, SourceError>
}

/** Rows a source rendered itself in a format's dialect: whole rows, never a row split across two chunks. */
export interface RenderedChunk {
  readonly bytes: Uint8Array
  readonly rows: number
}

/**
 * What `openRendered` gives: the rows already rendered by the source (`Rendered`), or — when it cannot render this
 * query (a type without a rendering, a `columns:` override) — the result as `open` would have given it (`Batches`),
 * opened on the same snapshot.
 */
export type RenderedOrBatches =
  | { readonly _tag: "Rendered"; readonly schema: BatchSchema; readonly chunks: Stream.Stream<RenderedChunk, SourceError> }
  | { readonly _tag: "Batches"; readonly result: SourceResult }

/** The text dialects a source may render rows in; `csv` is the CSV format's exact text (docs/formats/csv.md). */
export type RenderDialect = "csv"

/** A query's output columns, known without reading rows. */
export interface SourceDescription {
  readonly schema: BatchSchema
  /** The primary key columns of `query.table`, in key order; empty when there is none or no table. */
  readonly primaryKey: ReadonlyArray<string>
}

/** The range of one column over a query's rows (with its filters), as source text; `null` when there are no rows. */
export interface ColumnBounds {
  readonly min: string | null
  readonly max: string | null
  readonly hasNulls: boolean
}

/**
 * A program's own step between the source and the format — filter, map, enrich — given in code (never in YAML).
 * It receives the source's schema and batches and returns the schema and batches to encode; the runtime keeps
 * backpressure, scoping, retries, naming, the manifest and `_SUCCESS` around it. Cursors and keyset positions
 * are taken from the source's batches, before the transform.
 */
export type BatchTransform<E = never, R = never> = (input: SourceResult) => {
  readonly schema: BatchSchema
  /** May fail with the program's own errors `E` and use its services `R` (provided once, to `runExportsEffect`). */
  readonly batches: Stream.Stream<Batch, RivetError | E, R>
}

/**
 * Which data a source reads, never with its password: a worker joining a distributed run, or a `--resume`, must
 * read the same (docs/state.md). Empty text where the connection leaves a part to the driver's default.
 */
export interface SourceIdentity {
  readonly host: string
  readonly port: string
  readonly database: string
  readonly user: string
}

/** What a source plugin's layer provides: the primitives the runtime needs to read (and plan) an export. */
export interface SourceDriverShape {
  /** Label for reports: `Postgres`. */
  readonly label: string
  /** Where the data comes from, with any password masked: `postgres://app:***@db:5432/shop`. */
  readonly displayUrl: string
  /** Which database this reads; without it the runtime compares `displayUrl` instead. */
  readonly identity?: SourceIdentity | undefined
  /** Connect and run a trivial query (for `rivet doctor`). */
  readonly check: Effect.Effect<void, SourceError>
  /**
   * What `rivet doctor` shows after the source's passing check, e.g. how the connection is secured
   * (`TLS TLSv1.3, certificate verified (verify-full)`); undefined when there is nothing to say.
   */
  readonly connectionDetail?: Effect.Effect<string | undefined, SourceError> | undefined
  /**
   * Opens a result in the caller's scope; closing the scope releases the cursor and connection. The runtime closes
   * it as soon as the last batch is read, before that batch is encoded and written.
   */
  readonly open: (query: SourceQuery) => Effect.Effect<SourceResult, SourceError, Scope.Scope>
  /**
   * The following primitives let the runtime plan the modes beyond `full` (incremental, chunked, keyset,
   * time_window). A source without them supports `mode: full` only, and a config asking for more is refused.
   */
  /** The query's output schema (and the table's primary key) without reading rows. */
  readonly describe?: (query: SourceQuery) => Effect.Effect<SourceDescription, SourceError>
  /** min/max of `column` over the query's rows and whether any is NULL — one short statement. */
  readonly bounds?: (query: SourceQuery, column: string) => Effect.Effect<ColumnBounds, SourceError>
  /** The statement the source runs for a query, for plans and reports (parameters shown inline). */
  readonly render?: (query: SourceQuery) => string
  /**
   * How many rows the query would return, from catalog statistics — never by running it (for `rivet plan`).
   * `undefined` when the source cannot tell (e.g. a table never analyzed).
   */
  readonly estimateRows?: (query: SourceQuery) => Effect.Effect<number | undefined, SourceError>
  /**
   * Opens a result like `open`, but with the rows rendered by the source itself in `dialect`, byte for byte what
   * the format would write from the batches (e.g. PostgreSQL's `COPY … (FORMAT csv)`). The runtime asks for it only
   * when nothing needs the values (no transform, no value-reading quality gate, no tracked cursor column) and the
   * export's format takes that dialect; a source that cannot render the query answers `Batches`.
   */
  readonly openRendered?: (
    query: SourceQuery,
    dialect: RenderDialect
  ) => Effect.Effect<RenderedOrBatches, SourceError, Scope.Scope>
  /** Change data capture (`mode: cdc`): a source without it cannot run that mode. */
  readonly changes?: SourceChanges | undefined
}

/** The tag a source plugin's `make` layer provides. */
export class SourceDriver extends Context.Tag("rivet/SourceDriver")<SourceDriver, SourceDriverShape>() {}

/** A source plugin value (the YAML `source.type`); make one with `defineSource`. */
export interface SourcePlugin<C = unknown, I = unknown, T extends string = string> extends PluginBase<"source", C, I, T> {
  readonly make: (config: C, context: PluginContext) => Layer.Layer<SourceDriver, SourceError>
  /** Lets `rivet init` write a starter config from a live database of this source. */
  readonly discovery?: SourceDiscovery | undefined
}

/** Declares a source plugin (the YAML `source.type`). */
export const defineSource = <C, I, const T extends string = string>(
  definition: Definition<SourcePlugin<C, I, T>>
): SourcePlugin<C, I, T> => ({
  ...definition,
  kind: "source",
  apiVersion: definition.apiVersion ?? PLUGIN_API_VERSION
})
