import type * as Layer from "effect/Layer"
import type * as Schema from "effect/Schema"
import type { FormatError, SinkError, SourceError } from "../errors.js"
import type { PluginContext } from "./base.js"
import type { FormatDriver, FormatPlugin } from "./format.js"
import type { SinkDriver } from "./sink.js"
import type { SourceDriver, SourcePlugin } from "./source.js"

/**
 * A plugin as a list holds it, whatever its config type: the built-ins, `plugins:`, `runExports({ plugins })`, a
 * decoded config. Each plugin's own `SourcePlugin<C, I, T>` (or format, sink) fits it as it is, with no cast:
 * - `config` is any schema without requirements: a schema's type is invariant, so no `Schema<unknown>` would take a
 *   real plugin's, and to the holder what it decodes is `unknown`;
 * - `make` is a method, whose parameter TypeScript compares both ways, so `make(config: C, …)` fits.
 * What keeps that sound is the one rule the runtime follows: it calls `make` only with what the same plugin's
 * `config` decoded (`configure` in config/model.ts).
 */
interface ErasedPlugin<Kind extends string, L> {
  readonly kind: Kind
  readonly type: string
  readonly apiVersion: number
  readonly config: Schema.Schema.AnyNoContext
  readonly description?: string
  make(config: unknown, context: PluginContext): L
}

/** Any source plugin (see `ErasedPlugin`). */
export interface AnySourcePlugin extends ErasedPlugin<"source", Layer.Layer<SourceDriver, SourceError>> {
  readonly discovery?: SourcePlugin["discovery"]
}

/** Any format plugin (see `ErasedPlugin`). */
export interface AnyFormatPlugin extends ErasedPlugin<"format", Layer.Layer<FormatDriver, FormatError>> {
  readonly encoderThread?: FormatPlugin["encoderThread"]
}

/** Any sink plugin (see `ErasedPlugin`). */
export type AnySinkPlugin = ErasedPlugin<"sink", Layer.Layer<SinkDriver, SinkError>>

/** Any plugin value, as listed in `plugins:` or passed to `runExports({ plugins })`. */
export type AnyPlugin = AnySourcePlugin | AnyFormatPlugin | AnySinkPlugin
