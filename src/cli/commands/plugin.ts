import * as Args from "@effect/cli/Args"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as path from "node:path"
import type { RivetError } from "../../core/errors.js"
import { ExitCode, printErrors, worstExitCode } from "../exit.js"
import { scaffoldPlugin } from "../plugin-init/scaffold.js"

const nameArg = Args.text({ name: "name" }).pipe(
  Args.withDescription("npm package name of the plugin, e.g. rivet-sink-folder (its plugin type: folder)")
)

const kindOption = Options.choice("kind", ["sink", "format", "source"]).pipe(
  Options.withDescription("What the plugin provides (default sink)."),
  Options.withDefault("sink" as const)
)

const dirOption = Options.directory("dir", { exists: "either" }).pipe(
  Options.optional,
  Options.withDescription("Directory to create the package in (new or empty). Default: ./<name without @scope/>.")
)

/** `rivet plugin init <name> [--kind sink|format|source] [--dir DIR]` — a standalone plugin package. */
const initPluginCommand = Command.make("init", { name: nameArg, kind: kindOption, dir: dirOption }, ({ name, kind, dir }) =>
  Effect.gen(function* () {
    const target = Option.getOrElse(dir, () => name.replace(/^@[^/]+\//, ""))
    const { type, files } = yield* scaffoldPlugin(name, kind, target)
    yield* Console.log(
      `Wrote the ${kind} plugin ${name} (type: ${type}) in ${target}:\n${files.map((file) => `  ${file}`).join("\n")}\n` +
        `Next: cd ${path.relative(process.cwd(), path.resolve(target)) || "."} && npm install && npm test`
    )
    return new ExitCode(0)
  }).pipe(Effect.catchAll((error: RivetError) => Effect.as(printErrors([error]), new ExitCode(worstExitCode([error])))))
).pipe(
  Command.withDescription(
    "Create a standalone plugin package: package.json (Rivet and Effect 3 as peers), tsconfig.json, src/index.ts, " +
      "a vitest test (the sink conformance suite for a sink) and a README.\n\nExample:\n" +
      "  rivet plugin init rivet-sink-folder\n" +
      "  rivet plugin init @acme/rivet-format-lines --kind format --dir ./lines"
  )
)

export const pluginCommand = Command.make("plugin").pipe(
  Command.withDescription("Work on plugin packages (`rivet plugins` lists the plugins a config loads)."),
  Command.withSubcommands([initPluginCommand])
)
