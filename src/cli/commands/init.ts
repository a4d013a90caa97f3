import * as FileSystem from "@effect/platform/FileSystem"
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import * as path from "node:path"
import { fileProblem } from "../../config/read-file.js"
import { ConfigError, type RivetError } from "../../core/errors.js"
import { planInit } from "../../commands/init/plan.js"
import { renderInitYaml } from "../../commands/init/render.js"
import type { SourceDiscovery } from "../../core/plugin.js"
import { builtinSources } from "../../registry/builtins.js"
import { ExitCode, printErrors, worstExitCode } from "../exit.js"
import { printLines } from "../terminal.js"

const sourceEnvOption = Options.text("source-env").pipe(
  Options.withDescription("Environment variable holding the PostgreSQL or MySQL URL; the config names it (url_env), never its value."),
  Options.withDefault("DATABASE_URL")
)

const tableOption = Options.text("table").pipe(
  Options.withAlias("t"),
  Options.repeated,
  Options.withDescription("Only this table, `name` or `schema.name` (repeatable). Default: every table of --schema.")
)

const schemaOption = Options.text("schema").pipe(
  Options.withDescription(
    "Schema whose tables are listed (and where unqualified --table names are looked up); default public (MySQL: the URL's database)."
  ),
  Options.optional
)

const outputOption = Options.file("output", { exists: "either" }).pipe(
  Options.withAlias("o"),
  Options.optional,
  Options.withDescription("Write the config to this file (refused if it exists, unless --force). Default: stdout.")
)

const forceOption = Options.boolean("force").pipe(Options.withDescription("Overwrite the --output file if it exists."))

const exists = (file: string) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) => fs.exists(file)).pipe(Effect.orElseSucceed(() => false))

const existsError = (file: string) =>
  new ConfigError({
    path: "--output",
    message: `${file} already exists`,
    hint: "pass --force to overwrite it, or choose another -o path"
  })

const writeConfig = (file: string, text: string, force: boolean) =>
  Effect.flatMap(FileSystem.FileSystem, (fs) =>
    // `wx` refuses atomically: a file created between the check and the write is not overwritten either.
    Effect.mapError(fs.writeFileString(file, text, { flag: force ? "w" : "wx" }), (error) =>
      error._tag === "SystemError" && error.reason === "AlreadyExists"
        ? existsError(file)
        : new ConfigError({ path: "--output", message: `cannot write ${file}: ${fileProblem(error)}` })
    )
  )

/**
 * The built-in source that discovers tables behind `url`, by its scheme. A URL no source claims goes to the
 * PostgreSQL source, the default `source.type`, which explains what a connection URL must look like.
 */
const discoveryFor = (url: string): Effect.Effect<SourceDiscovery> =>
  Effect.promise(async () => {
    const scheme = /^([A-Za-z][A-Za-z0-9+.-]*):/.exec(url)?.[1]?.toLowerCase()
    const sources = await Promise.all(Object.values(builtinSources).map((load) => load()))
    const claimed = sources.find((source) => scheme !== undefined && source.discovery?.schemes.includes(scheme))
    return (claimed ?? sources.find((source) => source.type === "postgres")!).discovery!
  })

/** `rivet init [--source-env VAR] [--table t]… [--schema s] [-o rivet.yaml] [--force]` — a config from a live database. */
export const initCommand = Command.make(
  "init",
  {
    sourceEnv: sourceEnvOption,
    tables: tableOption,
    schema: schemaOption,
    output: outputOption,
    force: forceOption
  },
  ({ sourceEnv, tables, schema, output, force }) =>
    Effect.gen(function* () {
      const file = Option.getOrUndefined(output)
      if (file !== undefined && !force && (yield* exists(file))) return yield* Effect.fail(existsError(file))
      // Not echoed: a user who misread the option may have passed the URL itself, password included.
      if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(sourceEnv)) {
        return yield* Effect.fail(
          new ConfigError({
            path: "--source-env",
            message: "must be the NAME of an environment variable holding the connection URL, not the URL itself (value not shown)",
            hint: "export DATABASE_URL=postgres://user:password@host:5432/database, then run rivet init --source-env DATABASE_URL"
          })
        )
      }
      const url = process.env[sourceEnv]
      if (url === undefined || url === "") {
        return yield* Effect.fail(
          new ConfigError({
            path: "--source-env",
            message: `environment variable ${sourceEnv} is not set`,
            hint: `export ${sourceEnv}=postgres://user:password@host:5432/database, or pass --source-env with the name of the variable that holds the URL`
          })
        )
      }
      const origin = `environment variable ${sourceEnv} (--source-env)`
      const source = yield* discoveryFor(url)
      const discovery = yield* source.discover({ url, origin, schema: Option.getOrUndefined(schema), tables })
      const plan = planInit(discovery, {
        urlEnv: sourceEnv,
        fileName: file === undefined ? "rivet.yaml" : path.basename(file),
        generatedAt: new Date()
      })
      const text = renderInitYaml(plan)
      const reviews = plan.summary.reduce((sum, entry) => sum + entry.reviews, 0)
      const lines = [
        ...plan.summary.map((entry) => `  ${entry.name}: ${entry.mode}${entry.reviews > 0 ? ` (${entry.reviews} REVIEW)` : ""}`),
        ...discovery.skipped.map((table) => `  skipped ${table.schema}.${table.name}: ${table.reason}`),
        ...(reviews > 0 ? [`${reviews} line(s) marked # REVIEW: need a look before the first run.`] : [])
      ]
      if (file === undefined) {
        yield* printLines("stdout", text)
        yield* Console.error(`rivet init: ${plan.summary.length} export(s)\n${lines.join("\n")}`)
      } else {
        yield* writeConfig(file, text, force)
        yield* Console.log(
          `Wrote ${file}: ${plan.summary.length} export(s)\n${lines.join("\n")}\nNext: rivet check -c ${file} && rivet run -c ${file}`
        )
      }
      return new ExitCode(0)
    }).pipe(
      Effect.catchAll((error: RivetError) => Effect.as(printErrors([error]), new ExitCode(worstExitCode([error]))))
    )
).pipe(
  Command.withDescription(
    "Write a commented config for the tables of a live database: one export per table, its mode chosen by size " +
      "and primary key, column types checked (# REVIEW: marks what needs a decision).\n\nExample:\n" +
      "  export DATABASE_URL=postgres://app:secret@db:5432/shop\n" +
      "  rivet init --source-env DATABASE_URL -o rivet.yaml\n" +
      "  rivet init --table orders --table sales.invoices -o rivet.yaml --force\n" +
      "  rivet init --schema sales > sales.yaml"
  )
)
