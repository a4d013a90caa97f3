import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import type * as FileSystem from "@effect/platform/FileSystem"
import * as Console from "effect/Console"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import { validateConfigFile } from "../../registry/load-config.js"
import { type DoctorCheck, doctor } from "../../commands/doctor.js"
import type { RivetConfig } from "../../config/model.js"
import { exitCodeOf } from "../../core/errors.js"
import { readOnlyStateLayerFor } from "../../state/layer.js"
import { StateStore } from "../../state/store.js"
import { ExitCode, worstExitCode } from "../exit.js"
import { paramOption, useParams } from "../params.js"
import { configOption } from "./run.js"

const HINT_INDENT = "       "

const FAILED = "Some checks failed. Fix the issues above before running exports."

/**
 * `[OK]  <name>` (two spaces; `: <detail>` when the check says what it found; an indented `Note:` line for each
 * thing it could not do), `[WARN] <name>: <detail>` + an indented `Hint:` line, or `[FAIL] <name>: <what happened>`
 * + an indented `Hint:` line.
 */
export const renderCheck = (check: DoctorCheck): string => {
  const found = check.detail === undefined ? "" : `: ${check.detail}`
  if (!check.error && check.warning !== undefined) return [`[WARN] ${check.name}${found}`, `${HINT_INDENT}Hint: ${check.warning}`].join("\n")
  if (!check.error) return [`[OK]  ${check.name}${found}`, ...(check.notes ?? []).map((note) => `${HINT_INDENT}Note: ${note}`)].join("\n")
  const where = check.error._tag === "ConfigError" ? `${check.error.path}: ` : ""
  const lines = [`[FAIL] ${check.name}: ${where}${check.error.message}`]
  if (check.error.hint) lines.push(`${HINT_INDENT}Hint: ${check.error.hint}`)
  return lines.join("\n")
}

/** One check in `--json`: `status` ok, warning or failed, with what the text shows of it. */
export const checkJson = (check: DoctorCheck) => ({
  name: check.name,
  status: check.error ? "failed" : check.warning !== undefined ? "warning" : "ok",
  ...(check.detail !== undefined && { detail: check.detail }),
  ...(check.warning !== undefined && { hint: check.warning }),
  ...(check.notes !== undefined && check.notes.length > 0 && { notes: check.notes }),
  ...(check.slot !== undefined && {
    slot:
      check.slot === null
        ? null
        : { name: check.slot.name, active: check.slot.active, confirmed: check.slot.confirmed, retained_bytes: check.slot.retainedBytes }
  }),
  ...(check.error && {
    error: {
      type: check.error._tag,
      ...(check.error._tag === "ConfigError" && { path: check.error.path }),
      message: check.error.message,
      hint: check.error.hint,
      exit_code: exitCodeOf(check.error)
    }
  })
})

const jsonOption = Options.boolean("json").pipe(
  Options.withDescription(
    "Print a JSON report on stdout instead: { ok, checks: [{ name, status (ok, warning or failed), detail, hint, error, slot, … }] }."
  )
)

/**
 * The change-log positions the state holds for `names` (read-only: a missing SQLite state is an empty one); none when
 * the state cannot be read — doctor then checks the log without them. A config without a `mode: cdc` export does not
 * open the state.
 */
const storedPositions = (
  names: ReadonlyArray<string>,
  configDir: string
): Effect.Effect<ReadonlyMap<string, string>, never, FileSystem.FileSystem> => {
  const none: ReadonlyMap<string, string> = new Map()
  if (names.length === 0) return Effect.succeed(none)
  return Effect.gen(function* () {
    const store = yield* StateStore
    const found = new Map<string, string>()
    for (const name of names) {
      const cursor = Option.getOrUndefined(yield* store.cursor(name))
      if (cursor?.column === "__pos") found.set(name, cursor.value)
    }
    return found
  }).pipe(Effect.provide(readOnlyStateLayerFor({ configDir, env: process.env })), Effect.orElseSucceed(() => none))
}

const cdcExports = (config: RivetConfig) => config.exports.filter((spec) => spec.mode.kind === "cdc").map((spec) => spec.name)

/** `rivet doctor -c export.yaml [--json]` — checks the source, every export's query and change log, and every destination. */
export const doctorCommand = Command.make("doctor", { config: configOption, params: paramOption, json: jsonOption }, ({ config, params, json }) =>
  Effect.gen(function* () {
    const badParams = yield* useParams(params, config)
    if (badParams) return badParams
    if (!json) yield* Console.log(`rivet doctor: checking config '${config}'\n`)
    const loaded = yield* validateConfigFile(config)
    const checks: ReadonlyArray<DoctorCheck> = Either.isLeft(loaded)
      ? loaded.left.map((error) => ({ name: "Config", error }))
      : [
          { name: "Config parsed successfully" },
          ...(yield* doctor(loaded.right, { storedPositions: yield* storedPositions(cdcExports(loaded.right), loaded.right.configDir) }))
        ]
    const errors = checks.flatMap((check) => (check.error ? [check.error] : []))
    if (json) {
      yield* Console.log(JSON.stringify({ ok: errors.length === 0, checks: checks.map(checkJson) }, null, 2))
    } else {
      for (const check of checks) yield* Console.log(renderCheck(check))
      const warnings = checks.filter((check) => !check.error && check.warning !== undefined).length
      yield* Console.log(
        errors.length > 0 ? `\n${FAILED}` : warnings > 0 ? `\nAll checks passed, with ${warnings} warning(s) above.` : "\nAll checks passed."
      )
    }
    return new ExitCode(worstExitCode(errors))
  })
).pipe(
  Command.withDescription(
    "Check that the source answers, each query resolves, each mode: cdc export's change log is ready (server " +
      "settings, rights, replica identity, publication; its slot and the WAL it retains, a warning above 1 GiB) and each " +
      "destination is reachable and writable.\n\nExample:\n  rivet doctor -c export.yaml\n  rivet doctor -c export.yaml --json"
  )
)
