import type * as Schema from "effect/Schema"

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

export interface PluginBase<Kind extends string, C, I, T extends string> {
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

/**
 * What `define*` take. Write `apiVersion: PLUGIN_API_VERSION`'s value (a number literal, e.g. `1`) to record the
 * version the plugin was written for: without it, `define*` stamps the version of the Rivet it is loaded with, which
 * can never mismatch.
 */
export type Definition<P> = Omit<P, "kind" | "apiVersion"> & { readonly apiVersion?: number }
