import * as FileSystem from "@effect/platform/FileSystem"
import { createHash } from "node:crypto"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import type { RivetConfig } from "../../config/model.js"
import { fileProblem, readConfigBytes } from "../../config/read-file.js"
import { currentDate } from "../../core/clock.js"
import { ConfigError, describeCause } from "../../core/errors.js"
import { PLAN_VERSION, PlanFile, type PlannedExport } from "./model.js"
import { type ConfigIdentity, plannedExports } from "./verify.js"

/** The config file's absolute path and the sha256 of its bytes, as a plan records them. */
export const configIdentity = (file: string): Effect.Effect<ConfigIdentity, ConfigError, FileSystem.FileSystem> =>
  readConfigBytes(file).pipe(
    Effect.map((bytes) => ({ path: path.resolve(file), sha256: createHash("sha256").update(bytes).digest("hex") }))
  )

const decodePlan = Schema.decodeUnknownEither(PlanFile, { errors: "first", onExcessProperty: "error" })

const invalid = (file: string, message: string) =>
  new ConfigError({ path: "--plan", message: `${file}: ${message}`, hint: "make a new plan with `rivet plan -c <config> -o plan.json`" })

/** Reads and decodes a plan file written by `rivet plan -o`; a plan of another version or shape is refused. */
export const readPlanFile = (file: string): Effect.Effect<PlanFile, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const text = yield* Effect.mapError(fs.readFileString(file), (error) => invalid(file, `cannot read the plan: ${fileProblem(error)}`))
    const value = yield* Effect.try({
      try: (): unknown => JSON.parse(text),
      catch: (cause) => invalid(file, `not valid JSON (${describeCause(cause)})`)
    })
    if (typeof value === "object" && value !== null && "plan_version" in value && value.plan_version !== PLAN_VERSION) {
      return yield* invalid(file, `plan_version ${JSON.stringify(value.plan_version)} is not one this Rivet runs (it runs version ${PLAN_VERSION})`)
    }
    const decoded = decodePlan(value)
    if (Either.isRight(decoded)) return decoded.right
    const [issue] = ParseResult.ArrayFormatter.formatErrorSync(decoded.left)
    const where = (issue?.path ?? []).map((segment) => (typeof segment === "number" ? `[${segment}]` : `.${String(segment)}`)).join("")
    return yield* invalid(file, `not a Rivet plan${where === "" ? "" : ` at ${where.replace(/^\./, "")}`}: ${issue?.message ?? "unexpected content"}`)
  })

/** Writes a plan as pretty JSON (written to a temp file beside it, then renamed, so a reader never sees half a plan). */
export const writePlanFile = (file: string, plan: PlanFile): Effect.Effect<void, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const fs = yield* FileSystem.FileSystem
    const temp = path.join(path.dirname(path.resolve(file)), `.${path.basename(file)}.tmp-${process.pid}`)
    yield* fs.writeFileString(temp, `${JSON.stringify(plan, null, 2)}\n`).pipe(
      Effect.zipRight(fs.rename(temp, file)),
      Effect.tapError(() => Effect.ignore(fs.remove(temp, { force: true }))),
      Effect.mapError(
        (error) =>
          new ConfigError({
            path: "--output",
            message: `cannot write the plan to ${file}: ${fileProblem(error)}`,
            hint: "choose a writable path for -o"
          })
      )
    )
  })

/**
 * Reads a plan for `rivet run --plan` and checks it against the config it is run with (`plannedExports`); with
 * `only`, just those of its exports, each of which the plan must have. Returns the planned exports by name.
 */
export const loadPlanFor = (
  planFile: string,
  configFile: string,
  config: RivetConfig,
  options: { readonly only?: ReadonlyArray<string> | undefined } = {}
): Effect.Effect<ReadonlyMap<string, PlannedExport>, ConfigError, FileSystem.FileSystem> =>
  Effect.gen(function* () {
    const plan = yield* readPlanFile(planFile)
    const planned = yield* plannedExports(plan, config, yield* configIdentity(configFile), yield* currentDate)
    const only = options.only ?? []
    if (only.length === 0) return planned
    const missing = only.find((name) => !planned.has(name))
    if (missing !== undefined) {
      return yield* new ConfigError({
        path: "--export",
        message: `export '${missing}' is not in the plan ${planFile}`,
        hint: `the plan has: ${[...planned.keys()].join(", ")}; plan it with \`rivet plan -c <config> -e ${missing} -o plan.json\``
      })
    }
    return new Map([...planned].filter(([name]) => only.includes(name)))
  })
