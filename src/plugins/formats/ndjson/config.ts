import * as Schema from "effect/Schema"
import { textCompressionField } from "../text/gzip.js"

/** The export-level keys the NDJSON format owns. */
export const NdjsonConfig = Schema.Struct({
  compression: textCompressionField("NDJSON")
}).annotations({
  identifier: "NdjsonFormat",
  description: "Newline-delimited JSON: one object per row, keys in column order, NULL as null."
})

export type NdjsonConfig = typeof NdjsonConfig.Type
