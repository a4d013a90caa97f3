import type * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import type { ConfigPlugins } from "../config/json-schema.js"
import type { ConfigError } from "../core/errors.js"
import type { AnyPlugin } from "../core/plugin.js"
import { makeResolver } from "./resolver.js"

/**
 * Every available plugin value — the built-ins, plugins passed in code, then the modules named under `plugins:` —
 * loaded (built-ins lazily import their module, so this loads the AWS SDK too). For `rivet schema`.
 */
export const loadAllPlugins = (
  specifiers: ReadonlyArray<string>,
  configDir: string,
  extra: ReadonlyArray<AnyPlugin> = []
): Effect.Effect<ConfigPlugins, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const resolver = yield* makeResolver(specifiers, configDir, extra)
    const load = <P>(types: ReadonlyArray<string>, lookup: (type: string) => Effect.Effect<P | undefined, ConfigError>) =>
      Effect.map(Effect.forEach(types, lookup), (plugins) => plugins.filter((plugin): plugin is P => plugin !== undefined))
    return {
      sources: yield* load(resolver.known.sources, resolver.source),
      formats: yield* load(resolver.known.formats, resolver.format),
      sinks: yield* load(resolver.known.sinks, resolver.sink)
    }
  })
