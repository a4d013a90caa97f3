import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import type { BatchSchema } from "../batch.js"
import type { FormatError, SinkError } from "../errors.js"
import { type Definition, PLUGIN_API_VERSION, type PluginBase, type PluginContext } from "./base.js"
import type { PartEncoder, PartInfo, RenderedPartEncoder } from "./encoder.js"
import type { EncoderThreadSupport } from "./encoder-thread.js"
import type { RenderDialect } from "./source.js"

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
  /**
   * Present when the format's parts can be encoded on a thread of the export's own, beside the thread reading the
   * source: where that thread finds the format's part encoders. Whether a run uses it is the engine's choice.
   */
  readonly encoderThread?: EncoderThreadSupport | undefined
}

/** Declares a format plugin (the YAML `exports[].format`). */
export const defineFormat = <C, I, const T extends string = string>(
  definition: Definition<FormatPlugin<C, I, T>>
): FormatPlugin<C, I, T> => ({
  ...definition,
  kind: "format",
  apiVersion: definition.apiVersion ?? PLUGIN_API_VERSION
})
