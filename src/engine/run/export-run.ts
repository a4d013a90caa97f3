import type { CursorState } from "../../state/store.js"
import type { MarkerKeys } from "../../core/naming.js"
import type { HeldLease } from "../lease.js"
import type { ExportContext } from "../modes/context.js"
import type { DriftCheck } from "../modes/drift.js"
import type { OpenedTable } from "../table-format/table-format.js"
import type { UploadLedger } from "../upload-cleanup.js"
import type { RunOptions } from "./run-options.js"

/**
 * One export's run as its steps share it once the lease is held: the context its mode works with, and what the run
 * itself keeps until it ends. Declared alone so the steps, which all take it, import no step through it.
 */
export interface ExportRun {
  readonly ctx: ExportContext
  readonly options: RunOptions
  /** The export's lease, or — for a worker of a distributed run — the run's publish lease. */
  readonly lease: HeldLease
  /** When the run started (epoch ms), before it waited for its lease. */
  readonly startedAt: number
  /** The names of the export's `manifest.json`, `_SUCCESS` and kept manifests at the destination. */
  readonly keys: MarkerKeys
  /** The export's stored cursor when the run took its lease: what incremental mode compares and sets when it records. */
  readonly cursorFrom: CursorState | null
  readonly drift: DriftCheck
  /**
   * Every key and key prefix the run may have begun uploads under; the cleanup aborts those still pending. Kept for
   * every destination: the context has it only where there are pending uploads to abort.
   */
  readonly uploads: UploadLedger
  /** The export's table (`table_format:`), which the run commits its parts to as one snapshot when it publishes. */
  readonly table?: OpenedTable | undefined
}
