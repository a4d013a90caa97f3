import type { BatchSchema, ColumnData } from "../../runtime/batch.js"
import type { PartInfo } from "../../runtime/plugin.js"
import type { ParquetConfig } from "./config.js"

/**
 * Messages between an export's Parquet encoder thread and the thread that reads the source. Every part has an id;
 * each `Write` and `Finish` gets exactly one reply, in order.
 */
export type ToEncoder =
  | { readonly _tag: "Open"; readonly part: number; readonly schema: BatchSchema; readonly info: PartInfo | undefined }
  | { readonly _tag: "Write"; readonly part: number; readonly columns: ReadonlyArray<ColumnData>; readonly rowCount: number }
  | { readonly _tag: "Finish"; readonly part: number }

export type FromEncoder =
  | { readonly _tag: "Bytes"; readonly part: number; readonly chunks: ReadonlyArray<Uint8Array> }
  | { readonly _tag: "Failed"; readonly part: number; readonly message: string; readonly hint: string | undefined }

/** What the encoder thread starts with (its `workerData`). */
export interface EncoderInit {
  readonly config: ParquetConfig
}
