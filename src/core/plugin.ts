import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { Batch, BatchSchema, LogicalType } from "./batch.js"
import type { FormatError, RivetError, SinkError, SourceError } from "./errors.js"
import type { SourceDiscovery } from "./discovery/discovery.js"

/**
 * The plugin contract. A plugin is a plain value made with `defineSource` / `defineFormat` / `defineSink`;
 * nothing registers itself on import. `make` turns the plugin's decoded config block into a layer providing
 * the driver — the primitive operations. Retries, abort-on-failure, part rotation, naming, hashing, manifests
 * and progress are the runtime's job, never a plugin's.
 */
export const PLUGIN_API_VERSION = 1 as const

/** What every plugin's `make` receives besides its own config block. */
export interface PluginContext {
  /** Directory of the config file: relative paths in a config are relative to it. */
  readonly configDir: string
  /** The export this driver serves (`undefined` for a source shared by all exports). */
  readonly exportName?: string | undefined
  /** Environment variables (process.env unless a program passes its own). */
  readonly env: Readonly<Record<string, string | undefined>>
  /**
   * How many results the runtime may hold open at once (the largest `parallel` among the exports); a source
   * sizes its connection pool to at least this plus one for planning queries. Absent means 1.
   */
  readonly concurrency?: number | undefined
}

interface PluginBase<Kind extends string, C, I, T extends string> {
  readonly kind: Kind
  /** The value of `type:` in YAML (`source.type`, `exports[].destination.type`, `exports[].format`). */
  readonly type: T
  /**
   * The plugin API version the plugin was written for. Rivet refuses a plugin whose version is not its own,
   * saying which side to upgrade.
   */
  readonly apiVersion: number
  /** Decodes the plugin's config block; unknown keys are rejected by the runtime. */
  readonly config: Schema.Schema<C, I>
  /** One line for `rivet plugins` and docs. */
  readonly description?: string
}

export type { DiscoverRequest, SourceDiscovery } from "./discovery/discovery.js"

// ── Sources ────────────────────────────────────────────────────────────────

/**
 * An output column of the base query, or the first non-NULL of several columns (SQL `COALESCE(a, b)`: an
 * incremental cursor with a `cursor_fallback_column`). Only `After`, `AtMost` and `orderBy` take a `Coalesce`.
 */
export type ColumnRef = string | { readonly _tag: "Coalesce"; readonly columns: ReadonlyArray<string> }

/**
 * A condition on the rows of an export's base query, rendered by the source in its own dialect. Values are text in
 * the source's input syntax (`keyText` in `src/core/key-text.ts` makes them from batch values); the source binds
 * them as parameters, never by string concatenation.
 */
export type RowFilter =
  /** `low <= column <= high` (chunked mode). */
  | { readonly _tag: "Between"; readonly column: string; readonly low: string; readonly high: string }
  /** `column IS NULL` (the extra chunk that keeps rows with a NULL chunk key). */
  | { readonly _tag: "IsNull"; readonly column: string }
  /** Row-wise `(c1, c2, …) > (v1, v2, …)` (incremental cursor, keyset pages). */
  | { readonly _tag: "After"; readonly columns: ReadonlyArray<ColumnRef>; readonly values: ReadonlyArray<string> }
  /** `column >= value` (time windows). */
  | { readonly _tag: "AtLeast"; readonly column: string; readonly value: string }
  /** `column <= value` (cursor lag, time windows). */
  | { readonly _tag: "AtMost"; readonly column: ColumnRef; readonly value: string }

/** What one export asks of a source. */
export interface SourceQuery {
  readonly exportName: string
  /**
   * The export's base query (a `table:` shortcut is already resolved to `SELECT * FROM "schema"."table"`). With
   * `where`, `orderBy` or `limit` the source wraps it: `SELECT * FROM (<sql>) AS _rivet WHERE … ORDER BY … LIMIT n`.
   */
  readonly sql: string
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
  /** Present when the export named a table: lets the source read catalog details (e.g. numeric precision). */
  readonly table?: { readonly schema?: string | undefined; readonly name: string } | undefined
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

/** What a source plugin's layer provides: the primitives the runtime needs to read (and plan) an export. */
export interface SourceDriverShape {
  /** Label for reports: `Postgres`. */
  readonly label: string
  /** Where the data comes from, with any password masked: `postgres://app:***@db:5432/shop`. */
  readonly displayUrl: string
  /** Connect and run a trivial query (for `rivet doctor`). */
  readonly check: Effect.Effect<void, SourceError>
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
}

/** The tag a source plugin's `make` layer provides. */
export class SourceDriver extends Context.Tag("rivet/SourceDriver")<SourceDriver, SourceDriverShape>() {}

/** A source plugin value (the YAML `source.type`); make one with `defineSource`. */
export interface SourcePlugin<C = unknown, I = unknown, T extends string = string> extends PluginBase<"source", C, I, T> {
  readonly make: (config: C, context: PluginContext) => Layer.Layer<SourceDriver, SourceError>
  /** Lets `rivet init` write a starter config from a live database of this source. */
  readonly discovery?: SourceDiscovery | undefined
}

// ── Formats ────────────────────────────────────────────────────────────────

/** Encodes the batches of one output part. `write` returns the bytes ready so far (possibly none). */
export interface PartEncoder {
  readonly write: (batch: Batch) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  /** Ends the part (e.g. the Parquet footer) and returns the remaining bytes. */
  readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
}

/** Encodes one output part from rows a source rendered (see `SourceDriverShape.openRendered`). */
export interface RenderedPartEncoder {
  readonly write: (rows: Uint8Array) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
}

/** Which export and run a part belongs to, for formats that record it in the file (Parquet's key/value metadata). */
export interface PartInfo {
  readonly exportName: string
  readonly runId: string
}

/** What a format plugin's layer provides: a validator and a fresh `PartEncoder` per output part. */
export interface FormatDriverShape {
  /** File extension without the dot: `parquet`. */
  readonly extension: string
  readonly contentType: string
  /** Compression label for the manifest: `zstd`, `none`, … */
  readonly compression: string
  /** Fails when the schema cannot be encoded — checked before anything is written. */
  readonly validate: (schema: BatchSchema) => Effect.Effect<void, FormatError>
  /** A fresh encoder for one part; `part` is absent when the part belongs to no run (e.g. a test). */
  readonly open: (schema: BatchSchema, part?: PartInfo) => Effect.Effect<PartEncoder, FormatError>
  /**
   * Present when the format can take rows a source rendered in `dialect` (its own text, byte for byte): `open`
   * gives a part encoder that adds what the format adds around the rows (a header, compression).
   */
  readonly rendered?: {
    readonly dialect: RenderDialect
    readonly open: (schema: BatchSchema) => Effect.Effect<RenderedPartEncoder, FormatError>
  }
  /**
   * Counts the rows of one stored part (for `rivet validate`), reading it as a stream with bounded memory.
   * `read` opens the part's bytes from the start and may be called more than once; `key` is the part's key
   * (its extension tells e.g. a gzip-compressed part). Absent: row counts of this format are not verified.
   */
  readonly countRows?: (
    key: string,
    read: () => Stream.Stream<Uint8Array, SinkError>
  ) => Effect.Effect<number, FormatError | SinkError>
}

/** The tag a format plugin's `make` layer provides. */
export class FormatDriver extends Context.Tag("rivet/FormatDriver")<FormatDriver, FormatDriverShape>() {}

/**
 * A format's config block is made of the export-level keys it owns (for Parquet: `compression`,
 * `row_group_size`). Keys that neither the export nor the format knows are rejected.
 */
export interface FormatPlugin<C = unknown, I = unknown, T extends string = string> extends PluginBase<"format", C, I, T> {
  readonly make: (config: C, context: PluginContext) => Layer.Layer<FormatDriver, FormatError>
}

// ── Sinks ──────────────────────────────────────────────────────────────────

/** One object being written. Created by `SinkDriver.begin`. */
export interface UploadHandle {
  /**
   * Writes block `index` (0-based). Every block but the last is exactly `blockSize` bytes. Must be
   * idempotent — the runtime retries a failed block — and safe to call for several blocks at once when
   * `concurrency > 1`.
   */
  readonly writeBlock: (index: number, bytes: Uint8Array) => Effect.Effect<void, SinkError>
  /** Makes the object visible under its key. Nothing is visible before. */
  readonly complete: (blockCount: number) => Effect.Effect<void, SinkError>
  /** Discards everything written; leaves nothing behind. */
  readonly abort: Effect.Effect<void, SinkError>
}

/** How the runtime must drive a sink. */
export interface SinkCapabilities {
  /** Writes `manifest.json` and `_SUCCESS` (false for streams such as stdout). */
  readonly markers: boolean
  /** Size of the blocks handed to `writeBlock`. Small objects (one block) go through `put`. */
  readonly blockSize: number
  /** How many blocks of one object may be written at once. */
  readonly concurrency: number
  /**
   * `true` when the sink is done with the bytes given to `put` and `writeBlock` once the returned effect has
   * succeeded — it wrote or copied them, and keeps no reference. The runtime then frees its own block buffers at
   * once rather than leaving them to the garbage collector (less memory, fewer collections). Leave it out when
   * the sink may read the bytes later (it queues them, or keeps the arrays); the sink conformance suite checks it.
   */
  readonly releasesBytes?: boolean
}

/** An object found by `SinkDriverShape.list`: its key relative to the destination and its size in bytes. */
export interface StoredObject {
  readonly key: string
  readonly size: number
}

/** An upload a destination holds that was begun and neither completed nor aborted. */
export interface PendingUpload {
  /** The key relative to the destination. */
  readonly key: string
  /** The destination's id for the upload (S3: the UploadId). */
  readonly id: string
}

/**
 * Uploads the destination keeps (and may bill) until they are completed or aborted, which a lost response can leave
 * without a handle: S3 created the multipart upload, but the client never learned its id.
 */
export interface PendingUploads {
  /** The pending uploads whose key starts with `keyPrefix` (relative to the destination), every page of them. */
  readonly list: (keyPrefix: string) => Effect.Effect<ReadonlyArray<PendingUpload>, SinkError>
  /** Aborts one; an upload already gone is not an error. */
  readonly abort: (upload: PendingUpload) => Effect.Effect<void, SinkError>
}

/** What a sink plugin's layer provides: primitive, non-retrying destination operations. */
export interface SinkDriverShape {
  /** Label for doctor lines: `S3(my-bucket)`, `Local(./output)`. */
  readonly label: string
  /** The URI of a key (or of the destination root when no key): `s3://bucket/prefix/key`. */
  readonly uri: (key?: string) => string
  readonly capabilities: SinkCapabilities
  /** Reachability and write permission (for `rivet doctor`). */
  readonly check: Effect.Effect<void, SinkError>
  /** Writes a whole small object atomically. */
  readonly put: (key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<void, SinkError>
  /** Starts a large object written block by block. */
  readonly begin: (key: string, contentType: string) => Effect.Effect<UploadHandle, SinkError>
  /**
   * Every object under the destination, nested keys included (keys relative to it: validation finds the kept
   * manifests under `_manifests/`), where the destination can be listed.
   */
  readonly list?: Effect.Effect<ReadonlyArray<StoredObject>, SinkError>
  /**
   * Removes what writers that no longer run (a process killed mid-write) left behind — temp files, uploads never
   * completed — and returns their keys. Never touches objects under final keys or writes still in progress.
   * The runtime calls it before each export.
   */
  readonly sweep?: Effect.Effect<ReadonlyArray<string>, SinkError>
  /** Reads an object back, where the destination supports it. */
  readonly read?: (key: string) => Stream.Stream<Uint8Array, SinkError>
  /**
   * Destinations whose unfinished uploads outlive a lost `begin` response or an interrupted request (S3): the
   * runtime lists the keys it began uploads under and aborts what no handle completed (src/engine/upload-cleanup.ts).
   */
  readonly pendingUploads?: PendingUploads
}

/** The tag a sink plugin's `make` layer provides. */
export class SinkDriver extends Context.Tag("rivet/SinkDriver")<SinkDriver, SinkDriverShape>() {}

/** A sink plugin value (the YAML `exports[].destination.type`); make one with `defineSink`. */
export interface SinkPlugin<C = unknown, I = unknown, T extends string = string> extends PluginBase<"sink", C, I, T> {
  readonly make: (config: C, context: PluginContext) => Layer.Layer<SinkDriver, SinkError>
}

/**
 * A plugin with its config type erased, so plugins with different config blocks fit in one list. A schema's
 * type is invariant, hence `Schema.Schema.AnyNoContext` rather than `Schema<never, never>` (which no real
 * plugin's schema is assignable to).
 */
type Erased<P extends { readonly make: (config: never, context: PluginContext) => unknown }> = Omit<P, "config" | "make"> & {
  readonly config: Schema.Schema.AnyNoContext
  readonly make: (config: never, context: PluginContext) => ReturnType<P["make"]>
}

/** Any plugin value, as listed in `plugins:` or passed to `runExports({ plugins })`. */
export type AnyPlugin = Erased<SourcePlugin> | Erased<FormatPlugin> | Erased<SinkPlugin>

/**
 * What `define*` take. Write `apiVersion: PLUGIN_API_VERSION`'s value (a number literal, e.g. `1`) to record the
 * version the plugin was written for: without it, `define*` stamps the version of the Rivet it is loaded with, which
 * can never mismatch.
 */
type Definition<P> = Omit<P, "kind" | "apiVersion"> & { readonly apiVersion?: number }

/** Declares a source plugin (the YAML `source.type`). */
export const defineSource = <C, I, const T extends string = string>(
  definition: Definition<SourcePlugin<C, I, T>>
): SourcePlugin<C, I, T> => ({
  ...definition,
  kind: "source",
  apiVersion: definition.apiVersion ?? PLUGIN_API_VERSION
})

/** Declares a format plugin (the YAML `exports[].format`). */
export const defineFormat = <C, I, const T extends string = string>(
  definition: Definition<FormatPlugin<C, I, T>>
): FormatPlugin<C, I, T> => ({
  ...definition,
  kind: "format",
  apiVersion: definition.apiVersion ?? PLUGIN_API_VERSION
})

/** Declares a sink plugin (the YAML `exports[].destination.type`). */
export const defineSink = <C, I, const T extends string = string>(
  definition: Definition<SinkPlugin<C, I, T>>
): SinkPlugin<C, I, T> => ({
  ...definition,
  kind: "sink",
  apiVersion: definition.apiVersion ?? PLUGIN_API_VERSION
})
