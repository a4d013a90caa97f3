import type { BatchSchema, ColumnData } from "../../../core/batch.js"
import type { PartInfo } from "../../../core/plugin.js"
import type { CsvConfig } from "../csv/config.js"
import type { NdjsonConfig } from "../ndjson/config.js"
import type { ParquetConfig } from "../parquet/config.js"

/**
 * Messages between an export's encoder thread and the thread that reads the source. Every part has an id; each
 * `Write` and `Finish` gets exactly one reply, in order.
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
  | { readonly _tag: "Finish"; readonly part: number }

export type FromEncoder =
  | { readonly _tag: "Bytes"; readonly part: number; readonly chunks: ReadonlyArray<Uint8Array> }
  | { readonly _tag: "Failed"; readonly part: number; readonly message: string; readonly hint: string | undefined }

/**
 * What the encoder thread starts with (its `workerData`): the format and its config. Text formats are encoded
 * uncompressed on the thread; gzip runs on the reading side, where zlib already works off the JS thread.
 */
export type EncoderInit =
  | { readonly format: "parquet"; readonly config: ParquetConfig }
  | { readonly format: "csv"; readonly config: CsvConfig }
  | { readonly format: "ndjson"; readonly config: NdjsonConfig }
