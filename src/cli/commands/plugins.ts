import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { readPluginSpecifiers } from "../../registry/load-config.js"
import { listPlugins, type PluginListing, type PluginOrigins } from "../../registry/resolver.js"
import { configFailure, ExitCode } from "../exit.js"

const configOption = Options.file("config", { exists: "yes" }).pipe(
  Options.withAlias("c"),
  Options.withDescription("Also list the plugins named under `plugins:` in this config file."),
  Options.optional
)

const jsonOption = Options.boolean("json").pipe(
  Options.withDescription("Print JSON: { sources, formats, sinks }, each a list of { type, origin, description }.")
)

const SECTIONS: ReadonlyArray<readonly [keyof PluginOrigins, string]> = [
  ["source", "Sources (source.type)"],
  ["format", "Formats (exports[].format)"],
  ["sink", "Destinations (exports[].destination.type)"]
]

/** One aligned table per kind: type, origin, description. */
export const renderPlugins = (origins: PluginOrigins): string => {
  const all = SECTIONS.flatMap(([kind]) => origins[kind])
  const typeWidth = Math.max(...all.map((entry) => entry.type.length)) + 2
  const originWidth = Math.max(...all.map((entry) => entry.origin.length)) + 2
  const line = (entry: PluginListing) =>
    `  ${entry.type.padEnd(typeWidth)}${entry.origin.padEnd(originWidth)}${entry.description ?? ""}`.trimEnd()
  return SECTIONS.map(([kind, title]) => [title, ...origins[kind].map(line)].join("\n")).join("\n\n")
}

const asJson = (origins: PluginOrigins) =>
  JSON.stringify({ sources: origins.source, formats: origins.format, sinks: origins.sink }, null, 2)

/** `rivet plugins [-c export.yaml] [--json]` — every source, format and destination type and where it comes from. */
export const pluginsCommand = Command.make("plugins", { config: configOption, json: jsonOption }, ({ config, json }) =>
  Effect.gen(function* () {
    const listed = yield* Option.match(config, {
      onNone: () => listPlugins([], process.cwd()),
      onSome: (file) =>
        Effect.flatMap(readPluginSpecifiers(file), ({ specifiers, configDir }) => listPlugins(specifiers, configDir))
    }).pipe(Effect.either)
    if (listed._tag === "Left") return yield* configFailure([listed.left])
    const text = json ? asJson(listed.right) : renderPlugins(listed.right)
    yield* Console.log(text)
    return new ExitCode(0)
  })
).pipe(
  Command.withDescription(
    "List every available source, format and destination type, where it comes from (built-in or a plugins: entry) and what it does.\n\nExample:\n  rivet plugins\n  rivet plugins -c export.yaml --json"
  )
)
