import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import { ConfigError } from "../../core/errors.js"
import { StateStore } from "../../state/store.js"
import { metricsJson, renderMetrics } from "../metrics-render.js"
import { paramOption } from "../params.js"
import { exportMetrics } from "../run-metrics.js"
import { exportFilter, jsonOption, printJson, runState, scopeOf, withStore } from "../state-scope.js"
import { configOption } from "./run.js"

const lastOption = Options.integer("last").pipe(
  Options.withDefault(10),
  Options.withDescription("How many of each export's most recent runs to show.")
)

/** `rivet metrics -c export.yaml [-e name] [--last N] [--json]` — recent runs' durations, rows/s and bytes. */
export const metricsCommand = Command.make(
  "metrics",
  { config: configOption, exportName: exportFilter, params: paramOption, json: jsonOption, last: lastOption },
  ({ config, exportName, params, json, last }) =>
    runState(
      Effect.gen(function* () {
        if (last < 1) {
          return yield* new ConfigError({ path: "--last", message: `must be at least 1 (got ${last})`, hint: "e.g. --last 20" })
        }
        const scope = yield* scopeOf(config, exportName, params)
        const runs = scope.exists
          ? yield* withStore(scope, Effect.flatMap(StateStore, (store) => Effect.forEach(scope.exportNames, (name) => store.runs(name, last))))
          : scope.exportNames.map(() => [])
        const metrics = scope.exportNames.map((name, i) => exportMetrics(name, runs[i] ?? []))
        if (json) return yield* printJson(metricsJson(metrics))
        yield* Console.log(renderMetrics(metrics))
      })
    )
).pipe(
  Command.withDescription(
    "Per export, the durations, rows/s and bytes of its last runs (from the state), with the median, p90 and maximum " +
      "duration of the successful ones: what to look at before setting or raising a timeout.\n\nExample:\n" +
      "  rivet metrics -c export.yaml\n  rivet metrics -c export.yaml -e orders --last 30\n  rivet metrics -c export.yaml --json"
  )
)
