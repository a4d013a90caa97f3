import * as FileSystem from "@effect/platform/FileSystem"
import { createRequire } from "node:module"
import * as path from "node:path"
import { pathToFileURL } from "node:url"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import type { PluginResolver } from "../config/decode.js"
import { fileProblem } from "../config/read-file.js"
import { ConfigError, describeCause } from "../core/errors.js"
import { type AnyFormatPlugin, type AnyPlugin, type AnySinkPlugin, type AnySourcePlugin, PLUGIN_API_VERSION } from "../core/plugin.js"
import { builtinFormats, builtinSinks, builtinSources } from "./builtins.js"

type Kind = AnyPlugin["kind"]
type Entry = { readonly origin: string; readonly load: () => Promise<unknown> }
type Tables = Record<Kind, Map<string, Entry>>

const KINDS: ReadonlyArray<Kind> = ["source", "format", "sink"]

/** What is wrong with a module's default export, or undefined when it is a plugin value. */
const pluginProblem = (value: unknown): string | undefined => {
  if (value === undefined) return "has no default export"
  if (typeof value !== "object" || value === null) return `default-exports a ${value === null ? "null" : typeof value}, not a plugin`
  const record = value as Record<string, unknown>
  if (!KINDS.includes(record["kind"] as Kind)) return "default export is not a plugin value (no kind: source, format or sink)"
  if (typeof record["type"] !== "string" || record["type"] === "") return "default export has no 'type' string"
  if (!Schema.isSchema(record["config"])) return `${String(record["type"])}: 'config' is not an effect Schema`
  if (typeof record["make"] !== "function") return `${String(record["type"])}: 'make' is not a function`
  return undefined
}

/** Why a plugin's `apiVersion` does not let this Rivet use it, and which side to upgrade. */
const apiVersionProblem = (plugin: AnyPlugin): { readonly message: string; readonly hint: string } | undefined => {
  const version: unknown = plugin.apiVersion
  if (version === PLUGIN_API_VERSION) return undefined
  if (version === undefined) {
    return {
      message: "has no apiVersion: it was not made with defineSource / defineFormat / defineSink",
      hint: "wrap the plugin value in defineSink({...}) (or defineSource / defineFormat) from 'rivet-export/plugin'"
    }
  }
  if (typeof version !== "number" || !Number.isInteger(version) || version < 0) {
    return {
      message: `has apiVersion ${JSON.stringify(version)}, which is not a plugin API version`,
      hint: `set apiVersion: ${PLUGIN_API_VERSION} (the version this Rivet implements), or leave it out`
    }
  }
  return {
    message: `targets plugin API version ${version}, this Rivet supports ${PLUGIN_API_VERSION}`,
    hint:
      version > PLUGIN_API_VERSION
        ? `upgrade Rivet to a release with plugin API version ${version}`
        : `upgrade the plugin to a release built for plugin API version ${PLUGIN_API_VERSION}`
  }
}

/**
 * The module URL of a `plugins:` entry. Paths (`./x.js`, `../plugins/my-sink`, absolute) are relative to the config
 * file; a directory means the package in it (its `exports["."]`, else `main`, else `index.js`). Anything else is
 * an npm package name, resolved from the config's directory like that project's own dependencies.
 */
const importSpecifier = (specifier: string, configDir: string): Effect.Effect<string, string, FileSystem.FileSystem> => {
  if (!specifier.startsWith(".") && !path.isAbsolute(specifier)) {
    return Effect.try({
      try: () => pathToFileURL(createRequire(path.join(configDir, "noop.js")).resolve(specifier)).href,
      catch: describeCause
    })
  }
  const target = path.resolve(configDir, specifier)
  return Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const info = yield* fs.stat(target).pipe(
      Effect.map((info) => info.type),
      // A missing path is imported as given, for Node's own "Cannot find module" message.
      Effect.catchIf((error) => error._tag === "SystemError" && error.reason === "NotFound", () => Effect.succeed(undefined)),
      Effect.mapError(fileProblem)
    )
    return pathToFileURL(info === "Directory" ? yield* packageEntry(fs, target) : target).href
  })
}

const packageEntry = (fs: FileSystem.FileSystem, dir: string): Effect.Effect<string, string> =>
  Effect.gen(function* () {
    const manifestPath = path.join(dir, "package.json")
    if (!(yield* fs.exists(manifestPath).pipe(Effect.orElseSucceed(() => false)))) return path.join(dir, "index.js")
    const text = yield* Effect.mapError(fs.readFileString(manifestPath), fileProblem)
    const manifest = yield* Effect.try({ try: () => JSON.parse(text) as { exports?: unknown; main?: unknown }, catch: describeCause })
    return entryOf(dir, manifest)
  })

/** The module a package directory's manifest names: its `exports["."]` (import, node or default), else `main`. */
const entryOf = (dir: string, manifest: { exports?: unknown; main?: unknown }): string => {
  const root = (value: unknown): unknown =>
    typeof value === "object" && value !== null && "." in value ? (value as Record<string, unknown>)["."] : value
  const entry = (value: unknown): string | undefined => {
    if (typeof value === "string") return value
    if (typeof value !== "object" || value === null) return undefined
    const conditions = value as Record<string, unknown>
    return entry(conditions["import"]) ?? entry(conditions["node"]) ?? entry(conditions["default"])
  }
  const main = entry(root(manifest.exports)) ?? (typeof manifest.main === "string" ? manifest.main : "index.js")
  return path.resolve(dir, main)
}

const loadThirdParty = (specifier: string, index: number, configDir: string) => {
  const cannotLoad = (reason: string) =>
    new ConfigError({
      path: `plugins[${index}]`,
      message: `cannot load plugin '${specifier}': ${reason}`,
      hint: "give an installed npm package name, or a path (file or package directory) relative to the config file; a package written in TypeScript must be built first"
    })
  return Effect.mapError(importSpecifier(specifier, configDir), cannotLoad).pipe(
    Effect.flatMap((url) =>
      Effect.tryPromise({
        try: async () => (await import(url)) as { default?: unknown },
        catch: (cause) => cannotLoad(describeCause(cause))
      })
    ),
    Effect.flatMap((module) => {
      const plugin = module.default
      const problem = pluginProblem(plugin)
      if (problem !== undefined) {
        return Effect.fail(
          new ConfigError({
            path: `plugins[${index}]`,
            message: `plugin '${specifier}' ${problem}`,
            hint: "the module must `export default defineSink({...})` (or defineSource / defineFormat) from 'rivet-export/plugin'"
          })
        )
      }
      const mismatch = apiVersionProblem(plugin as AnyPlugin)
      if (mismatch !== undefined) {
        return Effect.fail(
          new ConfigError({ path: `plugins[${index}]`, message: `plugin '${specifier}' ${mismatch.message}`, hint: mismatch.hint })
        )
      }
      const valid = plugin as AnyPlugin
      return Effect.succeed(valid)
    })
  )
}

/** Built-ins, then plugins passed in code, then the `plugins:` modules; a type defined twice fails naming both. */
const loadTables = (
  specifiers: ReadonlyArray<string>,
  configDir: string,
  extra: ReadonlyArray<AnyPlugin>
): Effect.Effect<Tables, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const tables: Tables = { source: new Map(), format: new Map(), sink: new Map() }
    const builtins: Array<[Kind, Readonly<Record<string, () => Promise<unknown>>>]> = [
      ["source", builtinSources],
      ["format", builtinFormats],
      ["sink", builtinSinks]
    ]
    for (const [kind, table] of builtins) {
      for (const [type, load] of Object.entries(table)) tables[kind].set(type, { origin: "built-in", load })
    }
    const register = (plugin: AnyPlugin, origin: string, configPath: string) => {
      const existing = tables[plugin.kind].get(plugin.type)
      if (existing) {
        return Effect.fail(
          new ConfigError({
            path: configPath,
            message: `${plugin.kind} type '${plugin.type}' is defined twice: by ${existing.origin} and by ${origin}`,
            hint:
              existing.origin === "built-in"
                ? `a plugin cannot replace the built-in '${plugin.type}'; give it another type`
                : "remove one of them from plugins:"
          })
        )
      }
      tables[plugin.kind].set(plugin.type, { origin, load: () => Promise.resolve(plugin) })
      return Effect.void
    }
    for (const [index, plugin] of extra.entries()) {
      const problem = pluginProblem(plugin)
      if (problem !== undefined) {
        return yield* new ConfigError({ path: `plugins[${index}]`, message: `the plugin passed in code ${problem}` })
      }
      const mismatch = apiVersionProblem(plugin)
      if (mismatch !== undefined) {
        return yield* new ConfigError({
          path: `plugins[${index}]`,
          message: `the ${plugin.kind} plugin '${plugin.type}' passed in code ${mismatch.message}`,
          hint: mismatch.hint
        })
      }
      yield* register(plugin, "the program", "plugins")
    }
    for (const [index, specifier] of specifiers.entries()) {
      const plugin = yield* loadThirdParty(specifier, index, configDir)
      yield* register(plugin, `'${specifier}'`, `plugins[${index}]`)
    }
    return tables
  })

const loadEntry = <P>(kind: Kind, type: string, entry: Entry): Effect.Effect<P, ConfigError> =>
  Effect.tryPromise({
    try: () => entry.load() as Promise<P>,
    catch: (cause) =>
      new ConfigError({ path: kind, message: `cannot load the ${kind} plugin '${type}': ${describeCause(cause)}` })
  })

/**
 * The plugins available to a config: the built-ins plus the modules listed under `plugins:`.
 * A type defined twice fails at start-up naming both origins.
 */
export const makeResolver = (
  specifiers: ReadonlyArray<string>,
  configDir: string,
  extra: ReadonlyArray<AnyPlugin> = []
): Effect.Effect<PluginResolver, ConfigError, FileSystem.FileSystem> =>
  Effect.map(loadTables(specifiers, configDir, extra), (tables) => {
    const lookup =
      <P>(kind: Kind) =>
      (type: string): Effect.Effect<P | undefined, ConfigError> => {
        const entry = tables[kind].get(type)
        return entry ? loadEntry<P>(kind, type, entry) : Effect.succeed(undefined)
      }
    return {
      source: lookup<AnySourcePlugin>("source"),
      format: lookup<AnyFormatPlugin>("format"),
      sink: lookup<AnySinkPlugin>("sink"),
      known: {
        sources: [...tables.source.keys()],
        formats: [...tables.format.keys()],
        sinks: [...tables.sink.keys()]
      }
    }
  })

/** One available plugin type, for `rivet plugins`. */
export interface PluginListing {
  readonly type: string
  /** `built-in`, `the program`, or the `plugins:` entry in quotes. */
  readonly origin: string
  readonly description?: string | undefined
}

/** Where each available plugin type comes from (for `rivet plugins`), sorted by type. */
export type PluginOrigins = Record<Kind, ReadonlyArray<PluginListing>>

/** Every available source, format and sink type with its origin and description (loads each plugin to read it). */
export const listPlugins = (
  specifiers: ReadonlyArray<string>,
  configDir: string,
  extra: ReadonlyArray<AnyPlugin> = []
): Effect.Effect<PluginOrigins, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const tables = yield* loadTables(specifiers, configDir, extra)
    const list = (kind: Kind) =>
      Effect.forEach([...tables[kind].entries()].sort(([a], [b]) => a.localeCompare(b)), ([type, entry]) =>
        Effect.map(loadEntry<AnyPlugin>(kind, type, entry), (plugin) => ({
          type,
          origin: entry.origin,
          description: plugin.description
        }))
      )
    return { source: yield* list("source"), format: yield* list("format"), sink: yield* list("sink") }
  })
