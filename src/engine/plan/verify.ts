import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { CursorState } from "../../state/store.js"
import type { RivetConfig } from "../../config/model.js"
import { ConfigError, type StateError } from "../../core/errors.js"
import type { ExportContext } from "../modes/context.js"
import type { PreparedMode } from "../modes/mode.js"
import type { ModePlan, PlanFile, PlannedExport } from "./model.js"

const AGAIN = "run `rivet plan -c <config> -o plan.json` again, then `rivet run -c <config> --plan plan.json`"

const refuse = (path: string, message: string) => new ConfigError({ path, message, hint: AGAIN })

/** The config file a plan was made from: its absolute path and the hex sha256 of its bytes. */
export interface ConfigIdentity {
  readonly path: string
  readonly sha256: string
}

/**
 * Checks a whole plan file against the config it is run with: not expired, made from this config file (same path,
 * same bytes), and naming only exports the config has. Returns the planned exports by name, in plan order.
 */
export const plannedExports = (
  plan: PlanFile,
  config: RivetConfig,
  identity: ConfigIdentity,
  now: Date
): Effect.Effect<ReadonlyMap<string, PlannedExport>, ConfigError> =>
  Effect.gen(function* () {
    const expires = Date.parse(plan.expires_at)
    if (Number.isNaN(expires)) return yield* refuse("--plan", `expires_at '${plan.expires_at}' is not a date`)
    if (expires <= now.getTime()) {
      return yield* refuse(
        "--plan",
        `the plan expired at ${plan.expires_at} (made ${plan.created_at}; a plan is valid for 24 h)`
      )
    }
    if (plan.config.path !== identity.path) {
      return yield* refuse(
        "--plan",
        `the plan was made from another config (${plan.config.path}), not ${identity.path}`
      )
    }
    if (plan.config.sha256 !== identity.sha256) {
      return yield* refuse("--plan", `the config file ${identity.path} changed since the plan was made`)
    }
    const known = new Set(config.exports.map((spec) => spec.name))
    const byName = new Map<string, PlannedExport>()
    for (const planned of plan.exports) {
      if (!known.has(planned.name)) {
        return yield* refuse("--plan", `the plan names export '${planned.name}', which the config does not define`)
      }
      byName.set(planned.name, planned)
    }
    return byName
  })

const sameCursor = (a: CursorState | null, b: CursorState | null): boolean =>
  a === null || b === null ? a === b : a.column === b.column && a.value === b.value

const cursorText = (cursor: CursorState | null) => (cursor === null ? "none" : `${cursor.column} = ${cursor.value}`)

/**
 * Refuses to run a planned export when what the plan depends on moved: the config's query, mode settings, format
 * or destination (the plan's fingerprint), or — incremental — the stored cursor, which another run advanced.
 */
export const checkPlannedExport = (
  ctx: ExportContext,
  prepared: PreparedMode,
  plan: ModePlan
): Effect.Effect<void, ConfigError | StateError> =>
  Effect.gen(function* () {
    const path = `export '${ctx.spec.name}'`
    if (plan.mode !== ctx.spec.mode.kind || plan.fingerprint !== prepared.fingerprint) {
      return yield* refuse(
        path,
        "the plan no longer matches the config: the query, mode settings (e.g. chunk_size), format or destination changed since the plan was made"
      )
    }
    if (plan.cursor !== undefined) {
      const current = Option.getOrNull(yield* ctx.state.cursor(ctx.spec.name))
      if (!sameCursor(current, plan.cursor.stored)) {
        return yield* refuse(
          path,
          `the cursor has moved since the plan was made (planned from ${cursorText(plan.cursor.stored)}, now ${cursorText(current)})`
        )
      }
    }
  })
