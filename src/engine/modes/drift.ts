import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type { SchemaBaseline, StateStoreShape } from "../../state/store.js"
import type { BatchSchema } from "../../core/batch.js"
import type { ExportConfig } from "../../config/model.js"
import { currentDate } from "../../core/clock.js"
import { SchemaDriftError, type StateError } from "../../core/errors.js"
import { Manifest, schemaEntries, schemaFingerprint } from "../../core/manifest.js"
import type { ProgressReporterShape } from "../../core/progress.js"
import { decodeStored } from "./stored.js"

type Entry = { readonly name: string; readonly type: string }

/** `added x (int64); removed y; z: int32 → int64` */
export const describeDrift = (before: ReadonlyArray<Entry>, after: ReadonlyArray<Entry>): string => {
  const old = new Map(before.map((entry) => [entry.name, entry.type]))
  const now = new Map(after.map((entry) => [entry.name, entry.type]))
  const changes: Array<string> = []
  for (const [name, type] of now) if (!old.has(name)) changes.push(`added ${name} (${type})`)
  for (const name of old.keys()) if (!now.has(name)) changes.push(`removed ${name}`)
  for (const [name, type] of now) {
    const previous = old.get(name)
    if (previous !== undefined && previous !== type) changes.push(`${name}: ${previous} → ${type}`)
  }
  return changes.length > 0 ? changes.join("; ") : "columns reordered"
}

/** An export's schema-drift check against its baseline, and the baseline's update once the run succeeds. */
export interface DriftCheck {
  readonly check: (schema: BatchSchema) => Effect.Effect<void, SchemaDriftError>
  /** Stores the schema this run wrote as the new baseline. */
  readonly baselineAfterSuccess: Effect.Effect<void, StateError>
}

/**
 * Compares an export's output schema with the baseline of its last successful run (kept in state). `fail` stops
 * the run before anything is written; `warn` reports the change; both `warn` and `continue` accept the new schema
 * as the baseline once the run succeeds (`baselineAfterSuccess`).
 */
export const makeDriftCheck = (
  spec: ExportConfig,
  state: StateStoreShape,
  reporter: ProgressReporterShape
): Effect.Effect<DriftCheck, StateError> =>
  Effect.gen(function* () {
    const baseline = Option.getOrUndefined(yield* state.schemaBaseline(spec.name))
    const before =
      baseline && (yield* decodeStored(Manifest.fields.schema, spec.name, "schema baseline")(baseline.columns))
    let seen: SchemaBaseline | undefined
    const check = (schema: BatchSchema) =>
      Effect.flatMap(currentDate, (date) => {
        const fingerprint = schemaFingerprint(schema)
        if (seen?.fingerprint === fingerprint) return Effect.void
        seen = { fingerprint, columns: JSON.stringify(schemaEntries(schema)), updatedAt: date.toISOString() }
        if (!baseline || !before || baseline.fingerprint === fingerprint) return Effect.void
        const change = describeDrift(before, schemaEntries(schema))
        switch (spec.onSchemaDrift) {
          case "fail":
            return Effect.fail(
              new SchemaDriftError({
                message: `export '${spec.name}': the output schema changed since the last successful run (${change})`,
                hint: "nothing was written; accept the change with on_schema_drift: warn (or continue), or review the source"
              })
            )
          case "warn":
            return reporter.notice(spec.name, `schema changed since the last successful run: ${change}`)
          case "continue":
            return Effect.void
        }
      })
    const baselineAfterSuccess = Effect.suspend(() =>
      seen !== undefined && seen.fingerprint !== baseline?.fingerprint
        ? state.setSchemaBaseline(spec.name, seen)
        : Effect.void
    )
    return { check, baselineAfterSuccess }
  })
