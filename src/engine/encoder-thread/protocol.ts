import type { BatchSchema, ColumnData } from "../../core/batch.js"
import type { PartInfo } from "../../core/plugin.js"

/**
 * Messages between an export's encoder thread and the thread that reads the source. Every part has an id; each
 * `Write`, `WriteCapped` and `Finish` gets exactly one reply, in order.
 */
export type ToEncoder =
  | { readonly _tag: "Open"; readonly part: number; readonly schema: BatchSchema; readonly info: PartInfo | undefined }
  | {
      readonly _tag: "Write"
      readonly part: number
      readonly columns: ReadonlyArray<ColumnData>
      readonly rowCount: number
      /** The columns' buffers, transferred: the encoder thread owns them and frees them once they are encoded. */
      readonly buffers: ReadonlyArray<ArrayBuffer>
    }
  | {
      /**
       * `PartEncoder.writeCapped` on the thread. A batch is sent once, with its first capped write (`columns`
       * present); the thread keeps it under `batch` until its last row is taken, for the next part to continue it.
       */
      readonly _tag: "WriteCapped"
      readonly part: number
      readonly batch: number
      readonly columns: ReadonlyArray<ColumnData> | undefined
      readonly rowCount: number
      readonly buffers: ReadonlyArray<ArrayBuffer>
      readonly from: number
      readonly maxBytes: number
    }
  | { readonly _tag: "Finish"; readonly part: number }

export type FromEncoder =
  /**
   * `rows` answers a `WriteCapped`: the rows its bytes hold. `thread` answers a `Finish`: the id of the thread that
   * encoded the part (node:worker_threads' `threadId`), which the part's span records.
   */
  | {
      readonly _tag: "Bytes"
      readonly part: number
      readonly chunks: ReadonlyArray<Uint8Array>
      readonly rows?: number
      readonly thread?: number
    }
  | {
      readonly _tag: "Failed"
      readonly part: number
      readonly message: string
      readonly hint: string | undefined
      readonly quoted?: ReadonlyArray<string> | undefined
    }

/**
 * What the encoder thread starts with (its `workerData`): where the format's part encoders are
 * (`EncoderThreadSupport`), the format's type for messages, and the export's decoded format config, cloned.
 */
export interface EncoderInit {
  readonly format: string
  /** The module's URL (`file:`), as the thread's `import()` takes it. */
  readonly module: string
  readonly factory: string
  readonly config: unknown
  readonly freesBatchesAfterWrite: boolean
  readonly ownsReturnedBytes: boolean
}
