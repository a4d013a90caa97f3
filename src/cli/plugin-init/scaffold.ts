import * as FileSystem from "@effect/platform/FileSystem"
import * as Effect from "effect/Effect"
import * as path from "node:path"
import { fileProblem } from "../../config/read-file.js"
import { ConfigError } from "../../core/errors.js"
import { formatSource, formatTest } from "./format-template.js"
import { gitignore, packageJson, readme, tsconfigJson, type PluginKind } from "./package-template.js"
import { sinkSources, sinkTest } from "./sink-template.js"
import { sourceSource, sourceTest } from "./source-template.js"

const PACKAGE_NAME = /^(?:@[a-z0-9][a-z0-9._~-]*\/)?[a-z0-9][a-z0-9._~-]*$/
const TYPE_NAME = /^[a-z][a-z0-9_-]*$/

type Files = ReadonlyArray<readonly [string, string]>

const templates: Record<PluginKind, { sources: (type: string) => Files; test: (type: string) => string }> = {
  sink: { sources: sinkSources, test: sinkTest },
  format: { sources: (type) => [["src/index.ts", formatSource(type)]], test: formatTest },
  source: { sources: (type) => [["src/index.ts", sourceSource(type)]], test: sourceTest }
}

/** The plugin's `type`: the package name without its scope and a leading `rivet-<kind>-` (`rivet-sink-folder` → `folder`). */
export const pluginType = (name: string, kind: PluginKind): string =>
  name.replace(/^@[^/]+\//, "").replace(new RegExp(`^rivet-${kind}-`), "")

const badName = (name: string, why: string) =>
  new ConfigError({
    path: "<name>",
    message: `'${name}' is not a usable plugin package name: ${why}`,
    hint: "use a lower-case npm package name such as rivet-sink-folder or @acme/rivet-format-lines"
  })

const checkName = (name: string, kind: PluginKind) => {
  if (name.length > 214 || !PACKAGE_NAME.test(name)) return Effect.fail(badName(name, "npm package names are lower case letters, digits, - . _ ~ and an optional @scope/"))
  const type = pluginType(name, kind)
  if (!TYPE_NAME.test(type)) return Effect.fail(badName(name, `its plugin type '${type}' must start with a letter and use a-z, 0-9, - and _`))
  return Effect.succeed(type)
}

/** Refuses a directory that exists and is not empty: the scaffold never overwrites anything. */
const checkDirectory = (fs: FileSystem.FileSystem, dir: string) =>
  Effect.flatMap(
    fs.readDirectory(dir).pipe(
      Effect.catchIf(
        (error) => error._tag === "SystemError" && error.reason === "NotFound",
        () => Effect.succeed([])
      ),
      Effect.mapError(
        (error) =>
          new ConfigError({ path: "--dir", message: `cannot read ${dir}: ${fileProblem(error)}`, hint: "choose another directory with --dir" })
      )
    ),
    (entries) =>
      entries.length === 0
        ? Effect.void
        : Effect.fail(
            new ConfigError({
              path: "--dir",
              message: `${dir} already exists and is not empty`,
              hint: "choose a new or empty directory with --dir"
            })
          )
  )

/** The files of a standalone plugin package, by path relative to its directory. */
export const scaffoldFiles = (name: string, kind: PluginKind, type: string): Files => [
  ["package.json", packageJson(name, kind)],
  ["tsconfig.json", tsconfigJson],
  [".gitignore", gitignore],
  ["README.md", readme(name, kind, type)],
  ...templates[kind].sources(type),
  [`test/${kind}.test.ts`, templates[kind].test(type)]
]

/** Writes the plugin package into `dir` (created when absent); returns the files written. */
export const scaffoldPlugin = Effect.fn("PluginInit.scaffold")(function* (name: string, kind: PluginKind, dir: string) {
  const type = yield* checkName(name, kind)
  const fs = yield* FileSystem.FileSystem
  yield* checkDirectory(fs, dir)
  const files = scaffoldFiles(name, kind, type)
  yield* Effect.forEach(files, ([file, text]) =>
    fs.makeDirectory(path.dirname(path.join(dir, file)), { recursive: true }).pipe(
      Effect.zipRight(fs.writeFileString(path.join(dir, file), text, { flag: "wx" }))
    )
  ).pipe(
    Effect.mapError(
      (error) =>
        new ConfigError({ path: "--dir", message: `cannot write the plugin package in ${dir}: ${fileProblem(error)}`, hint: "check that the directory is writable" })
    )
  )
  return { type, files: files.map(([file]) => file) }
})
