import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { ConfigError } from "../../core/errors.js"
import { StateStore } from "../../state/store.js"
import { paramOption } from "../params.js"
import { exportFilter, jsonOption, printJson, runState, scopeOf, withStore } from "../state-scope.js"
import { filesJson, renderFiles, renderReset, renderSummaries, summariesJson } from "../state-render.js"
import { configOption } from "./run.js"
import { resetExport } from "../../commands/state-reset.js"
import { distributedRunJson, distributedRunOf, renderDistributedRun } from "../worker-render.js"

const showCommand = Command.make(
  "show",
  { config: configOption, exportName: exportFilter, params: paramOption, json: jsonOption },
  ({ config, exportName, params, json }) =>
    runState(
      Effect.gen(function* () {
        const scope = yield* scopeOf(config, exportName, params)
        const all = scope.exists ? yield* withStore(scope, Effect.flatMap(StateStore, (store) => store.exports)) : []
        const byName = new Map(all.map((summary) => [summary.exportName, summary]))
        const summaries = scope.exportNames.flatMap((name) => byName.get(name) ?? [])
        // Distributed runs (`rivet run --worker`, PostgreSQL state only): units per worker and claim ages.
        const distributed = new Map(
          scope.exists && summaries.length > 0
            ? yield* withStore(
                scope,
                Effect.flatMap(StateStore, (store) =>
                  Effect.forEach(summaries, (summary) =>
                    store.claims === undefined
                      ? Effect.succeed([summary.exportName, undefined] as const)
                      : Effect.map(store.claims.leases(summary.exportName), (leases) => [summary.exportName, distributedRunOf(leases, Date.now())] as const)
                  )
                )
              )
            : []
        )
        if (json) {
          return yield* printJson(
            summariesJson(summaries).map((entry) => {
              const run = distributed.get(entry.export_name)
              return run === undefined ? entry : { ...entry, distributed_run: distributedRunJson(run) }
            })
          )
        }
        const workerLines = [...distributed.entries()].flatMap(([name, run]) => (run === undefined ? [] : [renderDistributedRun(name, run)]))
        yield* summaries.length === 0
          ? Console.log(`No state recorded yet for ${config}. Run \`rivet run -c ${config}\` first.`)
          : Console.log([renderSummaries(summaries), ...workerLines].join("\n"))
      })
    )
).pipe(
  Command.withDescription(
    "Show each export's incremental cursor and last run.\n\nExample:\n  rivet state show -c export.yaml\n  rivet state show -c export.yaml -e orders --json"
  )
)

const limitOption = Options.integer("limit").pipe(
  Options.withDefault(50),
  Options.withDescription("How many files to list, newest first.")
)

const filesCommand = Command.make(
  "files",
  { config: configOption, exportName: exportFilter, params: paramOption, json: jsonOption, limit: limitOption },
  ({ config, exportName, params, json, limit }) =>
    runState(
      Effect.gen(function* () {
        if (limit < 1) {
          return yield* new ConfigError({ path: "--limit", message: `must be at least 1 (got ${limit})`, hint: "e.g. --limit 100" })
        }
        const scope = yield* scopeOf(config, exportName, params)
        const perExport = scope.exists
          ? yield* withStore(
              scope,
              Effect.flatMap(StateStore, (store) => Effect.forEach(scope.exportNames, (name) => store.files(name, limit)))
            )
          : []
        // Newest first across the config's exports (ISO-8601 UTC strings order like the times they name).
        const parts = perExport
          .flat()
          .sort((a, b) => (a.committedAt < b.committedAt ? 1 : a.committedAt > b.committedAt ? -1 : 0))
          .slice(0, limit)
        if (json) return yield* printJson(filesJson(parts))
        yield* parts.length === 0 ? Console.log("No files recorded yet.") : Console.log(renderFiles(parts))
      })
    )
).pipe(
  Command.withDescription(
    "List the files recorded by past runs, newest first.\n\nExample:\n  rivet state files -c export.yaml\n  rivet state files -c export.yaml -e orders --limit 10"
  )
)

const resetCommand = Command.make(
  "reset",
  {
    config: configOption,
    exportName: Options.text("export").pipe(
      Options.withAlias("e"),
      Options.withDescription("The export whose state to forget (required).")
    ),
    params: paramOption
  },
  ({ config, exportName, params }) =>
    runState(
      Effect.gen(function* () {
        const scope = yield* scopeOf(config, Option.some(exportName), params)
        // Nothing to reset in a state file that does not exist yet; do not create one just to say so.
        const clearState = (name: string) =>
          scope.exists
            ? withStore(scope, Effect.flatMap(StateStore, (store) => store.reset(name)))
            : Effect.succeed({ cursor: false, abandonedRuns: 0 })
        // mode: cdc: the export's replication slot is dropped too (the source is reached first).
        const result = yield* resetExport(scope.loaded, exportName, clearState)
        yield* Console.log(renderReset(exportName, result))
      })
    )
).pipe(
  Command.withDescription(
    "Forget an export's cursor and schema baseline and abandon its unfinished checkpointed runs: the next run starts " +
      "from scratch. The journal of past runs and files is kept. A mode: cdc export's replication slot is dropped on " +
      "the source too (which must answer).\n\nExample:\n  rivet state reset -c export.yaml -e orders"
  )
)

/** `rivet state show|files|reset -c export.yaml` — what Rivet remembers between runs. */
export const stateCommand = Command.make("state").pipe(
  Command.withDescription(
    "Inspect or reset what Rivet remembers between runs (cursors, runs, files). The state lives in .rivet_state.db " +
      "beside the config, or in PostgreSQL when RIVET_STATE_URL is set.\n\nExample:\n  rivet state show -c export.yaml"
  ),
  Command.withSubcommands([showCommand, filesCommand, resetCommand])
)
