import type * as Effect from "effect/Effect"
import type { BatchSchema } from "../../core/batch.js"
import type { ExportConfig } from "../../config/model.js"
import type { RivetError } from "../../core/errors.js"
import type { FormatDriverShape, SinkDriverShape, SourceDriverShape } from "../../core/plugin.js"
import type { ProgressReporterShape } from "../../core/progress.js"
import type { RetryPolicy } from "../../core/retry.js"
import type { LiveProgress } from "../live-progress.js"
import type { MaskKey } from "../masking.js"
import type { QualityGates } from "../quality/gates.js"
import type { UploadLedger } from "../upload-cleanup.js"

/**
 * What running a unit needs: built once per export by the run (`ExportContext` extends it), or by a chunk worker
 * thread for itself. Declared alone, beside neither the units nor the run, so that no import circle passes through it.
 */
export interface UnitContext {
  readonly spec: ExportConfig
  readonly source: SourceDriverShape
  readonly format: FormatDriverShape
  readonly sink: SinkDriverShape
  readonly reporter: ProgressReporterShape
  readonly progress: LiveProgress
  readonly retry: RetryPolicy
  /** The export's quality gates, fed every batch written. */
  readonly gates?: QualityGates | undefined
  /** Checks an output schema against the export's baseline before anything is written (schema drift). */
  readonly checkSchema: (schema: BatchSchema) => Effect.Effect<void, RivetError>
  /** The keys and key prefixes this run may have begun uploads under, cleaned up when the export ends. */
  readonly uploads?: UploadLedger | undefined
  /** The key of the export's hmac_sha256 masks (`masking:`). */
  readonly maskKey?: MaskKey | undefined
  /** Where the unit runs, for metrics: `main`, or the worker thread's lane (`lane-1`, …). */
  readonly lane?: string | undefined
}
