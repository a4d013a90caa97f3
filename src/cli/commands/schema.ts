import * as FileSystem from "@effect/platform/FileSystem"
import * as path from "node:path"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { loadAllPlugins } from "../../registry/all-plugins.js"
import { readPluginSpecifiers } from "../../registry/load-config.js"
import { configJsonSchema } from "../../config/json-schema.js"
import { fileProblem } from "../../config/read-file.js"
import { ConfigError } from "../../core/errors.js"
import { configFailure, ExitCode } from "../exit.js"
import { MODES } from "../../engine/modes/kinds/list.js"
import { printLines } from "../terminal.js"

const configOption = Options.file("config", { exists: "yes" }).pipe(
  Options.withAlias("c"),
  Options.withDescription("Also describe the plugins named under `plugins:` in this config file."),
  Options.optional
)

const outputOption = Options.file("output", { exists: "either" }).pipe(
  Options.withAlias("o"),
  Options.withDescription("Write the schema to this file instead of stdout."),
  Options.optional
)

const writeFile = (file: string, text: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    Effect.mapError(
      fs.writeFileString(file, text),
      (error) => new ConfigError({ path: file, message: `cannot write the schema: ${fileProblem(error)}`, hint: "check the --output path" })
    )
  )

/** `rivet schema [-c export.yaml] [-o rivet.schema.json]` — the JSON Schema of a config file, for editors. */
export const schemaCommand = Command.make("schema", { config: configOption, output: outputOption }, ({ config, output }) =>
  Effect.gen(function* () {
    const plugins = yield* Option.match(config, {
      onNone: () => loadAllPlugins([], process.cwd()),
      onSome: (file) =>
        Effect.flatMap(readPluginSpecifiers(file), ({ specifiers, configDir }) => loadAllPlugins(specifiers, configDir))
    }).pipe(Effect.either)
    if (plugins._tag === "Left") return yield* configFailure([plugins.left])
    const text = `${JSON.stringify(configJsonSchema(plugins.right, MODES), null, 2)}\n`
    if (Option.isNone(output)) {
      yield* printLines("stdout", text)
      return new ExitCode(0)
    }
    const written = yield* Effect.either(writeFile(output.value, text))
    if (written._tag === "Left") return yield* configFailure([written.left])
    yield* Console.error(`Wrote ${path.normalize(output.value)}`)
    return new ExitCode(0)
  })
).pipe(
  Command.withDescription(
    "Print the JSON Schema (draft-07) of a config file, generated from the schemas that decode it, for editor completion and checks. With -c, the config's plugins: are included.\n\nExample:\n  rivet schema > rivet.schema.json\n  rivet schema -c export.yaml -o rivet.schema.json\n  # then, first line of the YAML file:  # yaml-language-server: $schema=./rivet.schema.json"
  )
)
