import * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { ConfigError } from "../../../core/errors.js"
import { prepareChunked } from "../chunked.js"
import { defineMode } from "../define.js"
import { checkpointFields, checkpointSettings, noCheckpointNote } from "./checkpoint-keys.js"
import { chunkFields, DEFAULT_CHUNK_SIZE } from "./chunk-keys.js"
/** Above this, `parallel` connections are more than most databases and destinations gain from. */
const MANY_PARALLEL = 16

const keys = Schema.Struct({
  ...chunkFields,
  chunk_count: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 1_000_000, { message: () => "must be a whole number from 1 to 1000000" })).annotations({
      description:
        "chunked: the number of chunks instead of chunk_size (the Rust rivet's key): the key range read at the start of the run, divided into this many chunks of equal key width."
    })
  ),
  ...checkpointFields
})

export const chunkedMode = defineMode({
  kind: "chunked",
  summary: "chunked (key ranges, optionally in parallel)",
  keys,
  required: { keys: ["chunk_column"], withQuery: true },
  writesSeveralParts: true,
  distributable: true,
  read: (decoded, { path, hasTable }) => {
    if (decoded.chunk_column === undefined && !hasTable) {
      return Either.left([
        new ConfigError({
          path: `${path}.chunk_column`,
          message: "is required with mode: chunked when the export has a query instead of a table",
          hint: "name the integer column to split on, e.g. chunk_column: id"
        })
      ])
    }
    if (decoded.chunk_count !== undefined && decoded.chunk_size !== undefined) {
      return Either.left([
        new ConfigError({
          path: `${path}.chunk_count`,
          message: "is given with chunk_size",
          hint: "give one: chunk_size (key values per chunk) or chunk_count (chunks over the key range)"
        })
      ])
    }
    return Either.right({
      kind: "chunked" as const,
      chunkColumn: decoded.chunk_column,
      chunkSize: decoded.chunk_size ?? DEFAULT_CHUNK_SIZE,
      chunkCount: decoded.chunk_count,
      parallel: decoded.parallel ?? 1,
      ...checkpointSettings(decoded)
    })
  },
  behaviour: (settings) => ({
    prepare: (ctx) => prepareChunked(ctx, settings),
    parallel: settings.parallel,
    maxAttempts: settings.maxAttempts,
    rowKeyColumns: [settings.chunkColumn ?? ""],
    resumableWith: "chunk_checkpoint: true",
    lint: ({ at }) => [
      ...(settings.parallel <= MANY_PARALLEL
        ? []
        : [
            {
              severity: "warning" as const,
              path: at("parallel"),
              message: `parallel: ${settings.parallel} opens ${settings.parallel} source connections at once (plus one for planning), each running a query`,
              hint: `check the database's max_connections and load; ${MANY_PARALLEL} or fewer is usually enough to keep a destination busy`
            }
          ]),
      ...noCheckpointNote("chunked", "chunk", settings.checkpoint)(at)
    ]
  })
})
