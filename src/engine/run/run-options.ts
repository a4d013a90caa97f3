import type { SharedReader } from "../../core/plugin.js"
import type { RetryPolicy } from "../../core/retry.js"
import type { MaskKey } from "../masking.js"
import type { LaneSettings } from "../lanes/runner.js"
import type { LeaseSettings } from "../lease.js"
import type { ModePlan } from "../plan/model.js"
import type { WorkerSettings } from "../worker-join.js"

/** How one export runs: what the caller decided for every export of `rivet run` (run.ts), and its plan if any. */
export interface RunOptions {
  /** The source plugin's `type`, recorded in the manifest. */
  readonly sourceType: string
  /** The decoded `source:` block, part of the identity a resumed or joined run must match (run-identity.ts). */
  readonly sourceConfig?: unknown
  readonly retry?: RetryPolicy
  /** Continue the export's unfinished checkpointed run (`rivet run --resume`). */
  readonly resume?: boolean
  /** Chunked mode may run its chunks in worker threads that reload the config from this file (src/engine/lanes). */
  readonly lanes?: LaneSettings | undefined
  /** Run exactly this plan (`rivet run --plan`), refused when the config or the stored cursor moved since. */
  readonly plan?: ModePlan | undefined
  /** The export's lease: its time to live and how long to wait for another run holding it (default: 60 s, no wait). */
  readonly lease?: LeaseSettings | undefined
  /** `rivet run --worker`: join the distributed run named here instead of taking the export's lease. */
  readonly worker?: WorkerSettings | undefined
  /** The key of hmac_sha256 masks, resolved from the environment once for the whole run. */
  readonly maskKey?: MaskKey | undefined
  /** The export runs continuously: this run reads one window, ending early once `stop` aborts. */
  readonly follow?: { readonly stop: AbortSignal } | undefined
  /** See `ExportContext.sharing`. */
  readonly sharing?: ReadonlyArray<SharedReader> | undefined
}
