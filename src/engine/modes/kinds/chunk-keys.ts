import * as Schema from "effect/Schema"
import { ColumnName } from "../../../config/model.js"

export const DEFAULT_CHUNK_SIZE = 100_000

/** The keys that split a read into key ranges: chunked mode's chunks, and cdc's first-run snapshot. */
export const chunkFields = {
  chunk_column: Schema.optional(
    ColumnName.annotations({
      description: "chunked (and cdc's snapshot): integer column the chunks split on (default: the table's single integer primary key)."
    })
  ),
  chunk_size: Schema.optional(
    Schema.Int.pipe(Schema.greaterThanOrEqualTo(1, { message: () => "must be a whole number of at least 1" })).annotations({
      description: "chunked: key values per chunk (default 100000); cdc: set, the first run's snapshot is read in chunks of this many key values."
    })
  ),
  parallel: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 64, { message: () => "must be a whole number from 1 to 64" })).annotations({
      description: "chunked (and cdc's chunked snapshot): chunks read at once, each on its own connection (default 1)."
    })
  )
}
