import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import * as Effect from "effect/Effect"
import type { PluginResolver } from "../runtime/config/decode.js"
import { ConfigError, describeCause } from "../runtime/errors.js"
import { type AnyPlugin, type FormatPlugin, PLUGIN_API_VERSION, type SinkPlugin, type SourcePlugin } from "../runtime/plugin.js"
import { builtinFormats, builtinSinks, builtinSources } from "./builtins.js"

type Kind = AnyPlugin["kind"]
type Entry = { readonly origin: string; readonly load: () => Promise<unknown> }

const isPlugin = (value: unknown): value is AnyPlugin =>
  typeof value === "object" &&
  value !== null &&
  "kind" in value &&
  "type" in value &&
  "make" in value &&
  "config" in value &&
  typeof value.type === "string"

const importSpecifier = (specifier: string, configDir: string): string => {
  if (specifier.startsWith(".") || path.isAbsolute(specifier)) {
    return pathToFileURL(path.resolve(configDir, specifier)).href
  }
  // npm names resolve from the config's directory, like a project's own dependencies.
  return pathToFileURL(createRequire(path.join(configDir, "noop.js")).resolve(specifier)).href
}

const loadThirdParty = (specifier: string, index: number, configDir: string) =>
  Effect.tryPromise({
    try: async () => (await import(importSpecifier(specifier, configDir))) as { default?: unknown },
    catch: (cause) =>
      new ConfigError({
        path: `plugins[${index}]`,
        message: `cannot load plugin '${specifier}': ${describeCause(cause)}`,
        hint: "give an installed npm package name or a path relative to the config file"
      })
  }).pipe(
    Effect.flatMap((module) => {
      const plugin = module.default
      if (!isPlugin(plugin)) {
        return Effect.fail(
          new ConfigError({
            path: `plugins[${index}]`,
            message: `plugin '${specifier}' has no valid default export`,
            hint: "the module must `export default defineSink({...})` (or defineSource / defineFormat)"
          })
        )
      }
      if (plugin.apiVersion !== PLUGIN_API_VERSION) {
        return Effect.fail(
          new ConfigError({
            path: `plugins[${index}]`,
            message: `plugin '${specifier}' targets plugin API version ${String(plugin.apiVersion)}, this Rivet supports ${PLUGIN_API_VERSION}`,
            hint: "upgrade Rivet or use a plugin release built for this version"
          })
        )
      }
      return Effect.succeed(plugin)
    })
  )

/**
 * The plugins available to a config: the built-ins plus the modules listed under `plugins:`.
 * A type defined twice fails at start-up naming both origins.
 */
export const makeResolver = (
  specifiers: ReadonlyArray<string>,
  configDir: string,
  extra: ReadonlyArray<AnyPlugin> = []
): Effect.Effect<PluginResolver, ConfigError> =>
  Effect.gen(function* () {
    const tables: Record<Kind, Map<string, Entry>> = { source: new Map(), format: new Map(), sink: new Map() }
    const builtins: Array<[Kind, Readonly<Record<string, () => Promise<unknown>>>]> = [
      ["source", builtinSources],
      ["format", builtinFormats],
      ["sink", builtinSinks]
    ]
    for (const [kind, table] of builtins) {
      for (const [type, load] of Object.entries(table)) tables[kind].set(type, { origin: "built-in", load })
    }
    const register = (plugin: AnyPlugin, origin: string, path: string) => {
      const existing = tables[plugin.kind].get(plugin.type)
      if (existing) {
        return Effect.fail(
          new ConfigError({
            path,
            message: `${plugin.kind} type '${plugin.type}' is defined twice: by ${existing.origin} and by ${origin}`,
            hint: "remove one of them from plugins:"
          })
        )
      }
      tables[plugin.kind].set(plugin.type, { origin, load: () => Promise.resolve(plugin) })
      return Effect.void
    }
    for (const plugin of extra) yield* register(plugin, "the program", "plugins")
    for (const [index, specifier] of specifiers.entries()) {
      const plugin = yield* loadThirdParty(specifier, index, configDir)
      yield* register(plugin, `'${specifier}'`, `plugins[${index}]`)
    }
    const lookup =
      <P>(kind: Kind) =>
      (type: string): Effect.Effect<P | undefined, ConfigError> => {
        const entry = tables[kind].get(type)
        if (!entry) return Effect.succeed(undefined)
        return Effect.tryPromise({
          try: () => entry.load() as Promise<P>,
          catch: (cause) =>
            new ConfigError({ path: kind, message: `cannot load the ${kind} plugin '${type}': ${describeCause(cause)}` })
        })
      }
    return {
      source: lookup<SourcePlugin>("source"),
      format: lookup<FormatPlugin>("format"),
      sink: lookup<SinkPlugin>("sink"),
      known: {
        sources: [...tables.source.keys()],
        formats: [...tables.format.keys()],
        sinks: [...tables.sink.keys()]
      }
    }
  })

/** Where each available plugin type comes from (for `rivet plugins`). */
export type PluginOrigins = Record<Kind, ReadonlyArray<{ type: string; origin: string }>>
