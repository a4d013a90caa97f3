import * as Effect from "effect/Effect"
import type { Batch, BatchSchema } from "../../../core/batch.js"
import type { FormatError } from "../../../core/errors.js"
import type { PartEncoder, PartOpener } from "../../../core/plugin.js"
import { gzipPart, type TextCompression } from "./gzip.js"

/** A text format's parts: `open`'s uncompressed encoder, each part one gzip member when the export compresses. */
export const textParts =
  (format: string, open: (schema: BatchSchema) => Effect.Effect<PartEncoder, FormatError>, compression: TextCompression): PartOpener =>
  (schema) =>
    compression === "gzip"
      ? Effect.flatMap(open(schema), (encoder) => gzipPart(encoder, format, (batch: Batch) => batch.rowCount))
      : open(schema)
