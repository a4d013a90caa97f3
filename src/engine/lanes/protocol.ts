import type { BatchSchema } from "../../core/batch.js"
import type { PartRecord } from "../../core/manifest.js"
import type { UnitOutcome } from "../modes/run-unit.js"
import type { EncodedError } from "./errors.js"
import type { ChunkWork } from "../modes/chunk-work.js"

/** What a chunk worker thread starts with (its `workerData`). Plain data only: it is cloned into the thread. */
export interface LaneInit {
  /** The config file the main thread loaded; the worker reads it again with the same environment. */
  readonly configFile: string
  readonly env: Readonly<Record<string, string | undefined>>
  readonly exportName: string
  readonly retry: { readonly maxRetries: number; readonly initialDelayMs: number; readonly maxDelayMs: number }
  /**
   * What the main thread built from that file. A worker that builds anything else (the file was edited since)
   * refuses to start rather than write somewhere or something else.
   */
  readonly expect: {
    readonly sinkUri: string
    readonly extension: string
    readonly compression: string
    readonly maxFileSize: number | undefined
  }
}

/** Counters a worker adds to the export's progress since its previous report. */
export interface ProgressDelta {
  readonly rows: number
  readonly bytes: number
  readonly parts: number
  readonly retries: number
}

/** Main thread → worker. */
export type ToWorker =
  | { readonly _tag: "Run"; readonly work: ChunkWork }
  /** The answer to `CheckSchema`: no error means the schema may be written. */
  | { readonly _tag: "SchemaChecked"; readonly error?: EncodedError | undefined }
  /** Interrupt the running chunk (its uploads aborted, temp files removed), then answer `Aborted`. */
  | { readonly _tag: "Abort" }
  /** Release everything and end the thread. */
  | { readonly _tag: "Close" }

/** Worker → main thread. */
export type FromWorker =
  | { readonly _tag: "Ready"; readonly threadId: number }
  | { readonly _tag: "StartFailed"; readonly error: EncodedError }
  | ({ readonly _tag: "Progress" } & ProgressDelta)
  /** The chunk's output schema, to check against the export's baseline (schema drift) before anything is written. */
  | { readonly _tag: "CheckSchema"; readonly schema: BatchSchema }
  /** What the worker's `runUnit` told its progress reporter, for the main thread's. */
  | { readonly _tag: "PartCommitted"; readonly part: PartRecord }
  | { readonly _tag: "Notice"; readonly message: string }
  | { readonly _tag: "Done"; readonly outcome: UnitOutcome }
  | { readonly _tag: "Failed"; readonly error: EncodedError }
  | { readonly _tag: "Aborted" }
