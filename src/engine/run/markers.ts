import * as Effect from "effect/Effect"
import type { SinkError } from "../../core/errors.js"
import { encodeManifest, encodeSuccessMarker, type Manifest, schemaEntries, schemaFingerprint } from "../../core/manifest.js"
import { withRetry } from "../../core/retry.js"
import { verifyOwnManifest } from "../manifest-readback.js"
import type { ModeOutcome, RunJournal } from "../modes/mode.js"
import { withPartitionValues } from "../partition/check.js"
import type { ExportRun } from "./export-run.js"

const manifestOf = ({ ctx, options }: ExportRun, journal: RunJournal, outcome: ModeOutcome): Manifest => {
  const { spec } = ctx
  return {
    manifest_version: 1,
    run_id: journal.runId,
    export_name: spec.name,
    started_at: journal.startedAt.toISOString(),
    finished_at: ctx.now().toISOString(),
    status: "success",
    source: {
      type: options.sourceType,
      schema: spec.table?.schema,
      table: spec.table?.name,
      query: spec.query,
      mode: spec.mode.kind,
      ...(outcome.cursor ? { cursor: { column: outcome.cursor.column, value: outcome.cursor.value } } : {})
    },
    destination: { type: spec.destination.plugin.type, uri: ctx.sink.uri() },
    format: spec.format.plugin.type,
    compression: ctx.format.compression,
    schema: schemaEntries(outcome.schema),
    schema_fingerprint: schemaFingerprint(outcome.schema),
    ...(spec.masks.length === 0
      ? {}
      : {
          masked_columns: spec.masks.map((mask) => ({
            column: mask.column,
            method: mask.method,
            ...(mask.method === "hmac_sha256" && ctx.maskKey ? { key_id: ctx.maskKey.id } : {})
          }))
        }),
    row_count: outcome.parts.reduce((sum, part) => sum + part.rows, 0),
    part_count: outcome.parts.length,
    parts: spec.partition ? outcome.parts.map(withPartitionValues) : outcome.parts
  }
}

/**
 * Writes the run's markers: its kept manifest, `manifest.json` (read back: it must still be this run's), then
 * `_SUCCESS`. Returns the manifest written.
 */
export const writeMarkers = Effect.fn("Run.writeMarkers")(function* (run: ExportRun, journal: RunJournal, outcome: ModeOutcome) {
  const { ctx, keys } = run
  const retried = <A, E extends SinkError>(effect: Effect.Effect<A, E>) =>
    withRetry(effect, ctx.retry, () => ctx.progress.retried)
  const manifest = manifestOf(run, journal, outcome)
  const manifestBytes = encodeManifest(manifest)
  // The kept copy goes first, so no _SUCCESS can vouch for a run whose manifest is not kept; a crash before the
  // latest manifest leaves a kept manifest of a run that never published (docs/semantics.md §1).
  yield* retried(ctx.sink.put(keys.kept(journal.runId), manifestBytes, "application/json"))
  const receipt = yield* retried(ctx.sink.put(keys.manifest, manifestBytes, "application/json"))
  yield* verifyOwnManifest(ctx, journal.runId, manifestBytes, receipt)
  yield* retried(ctx.sink.put(keys.success, encodeSuccessMarker(manifestBytes), "text/plain"))
  return manifest
})
