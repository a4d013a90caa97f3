import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type * as Scope from "effect/Scope"
import type * as Stream from "effect/Stream"
import type { Batch, BatchSchema, LogicalType } from "./batch.js"
import type { FormatError, SinkError, SourceError } from "./errors.js"

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
}

interface PluginBase<Kind extends string, C, I> {
  readonly kind: Kind
  /** The value of `type:` in YAML (`source.type`, `exports[].destination.type`, `exports[].format`). */
  readonly type: string
  readonly apiVersion: typeof PLUGIN_API_VERSION
  /** Decodes the plugin's config block; unknown keys are rejected by the runtime. */
  readonly config: Schema.Schema<C, I>
  /** One line for `rivet plugins` and docs. */
  readonly description?: string
}

// ── Sources ────────────────────────────────────────────────────────────────

/** What one export asks of a source. */
export interface SourceQuery {
  readonly exportName: string
  /** The SQL to run (a `table:` shortcut is already resolved to `SELECT * FROM "schema"."table"`). */
  readonly sql: string
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

export interface SourceDriverShape {
  /** Label for reports: `Postgres`. */
  readonly label: string
  /** Where the data comes from, with any password masked: `postgres://app:***@db:5432/shop`. */
  readonly displayUrl: string
  /** Connect and run a trivial query (for `rivet doctor`). */
  readonly check: Effect.Effect<void, SourceError>
  /** Opens a result in the caller's scope; closing the scope releases the cursor and connection. */
  readonly open: (query: SourceQuery) => Effect.Effect<SourceResult, SourceError, Scope.Scope>
}

export class SourceDriver extends Context.Tag("rivet/SourceDriver")<SourceDriver, SourceDriverShape>() {}

export interface SourcePlugin<C = unknown, I = unknown> extends PluginBase<"source", C, I> {
  readonly make: (config: C, context: PluginContext) => Layer.Layer<SourceDriver, SourceError>
}

// ── Formats ────────────────────────────────────────────────────────────────

/** Encodes the batches of one output part. `write` returns the bytes ready so far (possibly none). */
export interface PartEncoder {
  readonly write: (batch: Batch) => Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
  /** Ends the part (e.g. the Parquet footer) and returns the remaining bytes. */
  readonly finish: Effect.Effect<ReadonlyArray<Uint8Array>, FormatError>
}

export interface FormatDriverShape {
  /** File extension without the dot: `parquet`. */
  readonly extension: string
  readonly contentType: string
  /** Compression label for the manifest: `zstd`, `none`, … */
  readonly compression: string
  /** Fails when the schema cannot be encoded — checked before anything is written. */
  readonly validate: (schema: BatchSchema) => Effect.Effect<void, FormatError>
  /** A fresh encoder for one part. */
  readonly open: (schema: BatchSchema) => Effect.Effect<PartEncoder, FormatError>
}

export class FormatDriver extends Context.Tag("rivet/FormatDriver")<FormatDriver, FormatDriverShape>() {}

/**
 * A format's config block is made of the export-level keys it owns (for Parquet: `compression`,
 * `row_group_size`). Keys that neither the export nor the format knows are rejected.
 */
export interface FormatPlugin<C = unknown, I = unknown> extends PluginBase<"format", C, I> {
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

export interface SinkCapabilities {
  /** Writes `manifest.json` and `_SUCCESS` (false for streams such as stdout). */
  readonly markers: boolean
  /** Size of the blocks handed to `writeBlock`. Small objects (one block) go through `put`. */
  readonly blockSize: number
  /** How many blocks of one object may be written at once. */
  readonly concurrency: number
}

export interface StoredObject {
  readonly key: string
  readonly size: number
}

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
  /** Objects under the destination (keys relative to it), where the destination can be listed. */
  readonly list?: Effect.Effect<ReadonlyArray<StoredObject>, SinkError>
  /** Reads an object back, where the destination supports it. */
  readonly read?: (key: string) => Stream.Stream<Uint8Array, SinkError>
}

export class SinkDriver extends Context.Tag("rivet/SinkDriver")<SinkDriver, SinkDriverShape>() {}

export interface SinkPlugin<C = unknown, I = unknown> extends PluginBase<"sink", C, I> {
  readonly make: (config: C, context: PluginContext) => Layer.Layer<SinkDriver, SinkError>
}

export type AnyPlugin = SourcePlugin<never, never> | FormatPlugin<never, never> | SinkPlugin<never, never>

type Definition<P> = Omit<P, "kind" | "apiVersion"> & { readonly apiVersion?: typeof PLUGIN_API_VERSION }

/** Declares a source plugin (the YAML `source.type`). */
export const defineSource = <C, I>(definition: Definition<SourcePlugin<C, I>>): SourcePlugin<C, I> => ({
  ...definition,
  kind: "source",
  apiVersion: PLUGIN_API_VERSION
})

/** Declares a format plugin (the YAML `exports[].format`). */
export const defineFormat = <C, I>(definition: Definition<FormatPlugin<C, I>>): FormatPlugin<C, I> => ({
  ...definition,
  kind: "format",
  apiVersion: PLUGIN_API_VERSION
})

/** Declares a sink plugin (the YAML `exports[].destination.type`). */
export const defineSink = <C, I>(definition: Definition<SinkPlugin<C, I>>): SinkPlugin<C, I> => ({
  ...definition,
  kind: "sink",
  apiVersion: PLUGIN_API_VERSION
})
