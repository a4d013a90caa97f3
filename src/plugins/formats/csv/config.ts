import * as Schema from "effect/Schema"
import { textCompressionField } from "../text/gzip.js"

/** The export-level keys the CSV format owns. */
export const CsvConfig = Schema.Struct({
  compression: textCompressionField("CSV")
}).annotations({
  identifier: "CsvFormat",
  description: "CSV (RFC 4180): a header row, comma delimiter, LF line endings, NULL as an empty field."
})

export type CsvConfig = typeof CsvConfig.Type
