import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type SinkError, TableCommitError } from "../../core/errors.js"
import type { SinkDriverShape } from "../../core/plugin.js"
import { type RetryPolicy, withRetry } from "../../core/retry.js"

/**
 * The objects of a table at its location (the export's destination), through the sink: whole small files read and
 * written with the runtime's retries, and keys turned into the absolute locations table metadata holds.
 */
export interface TableFiles {
  /** The table's name for messages: `shop.orders`. */
  readonly table: string
  /** The table location: the destination's URI without its trailing slash. */
  readonly location: string
  readonly locationOf: (key: string) => string
  /** The key of an absolute location inside the table, or undefined for one outside it. */
  readonly keyOf: (location: string) => string | undefined
  /** A whole object, or undefined when there is none under the key. */
  readonly read: (key: string) => Effect.Effect<Uint8Array | undefined, TableCommitError>
  readonly readRange: (key: string, offset: number, length: number) => Effect.Effect<Uint8Array, TableCommitError>
  readonly put: (key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<void, TableCommitError>
  /** Writes only when the key is free: false when an object is there (another writer's commit). */
  readonly create: (key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<boolean, TableCommitError>
}

export const tableFilesOf = (sink: SinkDriverShape, table: string, retry: RetryPolicy): TableFiles => {
  const location = sink.uri().replace(/\/+$/, "")
  const failure = (action: string) => (error: SinkError) =>
    new TableCommitError({
      table,
      message: `could not ${action} of table ${table}: ${error.message}`,
      hint: error.hint,
      retryable: error.retryable,
      cause: error
    })
  const retried = <A>(effect: Effect.Effect<A, SinkError>) => withRetry(effect, retry, () => {})
  const missing = (what: string) =>
    Effect.fail(
      new TableCommitError({
        table,
        message: `the destination ${sink.label} cannot ${what}, which an Iceberg table needs`,
        hint: "write the table to a local or s3 destination",
        retryable: false
      })
    )
  return {
    table,
    location,
    locationOf: (key) => `${location}/${key}`,
    keyOf: (absolute) => (absolute.startsWith(`${location}/`) ? absolute.slice(location.length + 1) : undefined),
    read: (key) => {
      const { read } = sink
      if (read === undefined) return missing("read objects back")
      return retried(Stream.runCollect(read(key))).pipe(
        Effect.map((chunks) => Buffer.concat(Chunk.toReadonlyArray(chunks))),
        Effect.map((bytes): Uint8Array | undefined => new Uint8Array(bytes)),
        Effect.catchIf((error) => error.reason === "NotFound", () => Effect.succeed(undefined)),
        Effect.mapError(failure(`read ${key}`))
      )
    },
    readRange: (key, offset, length) => {
      const { readRange } = sink
      if (readRange === undefined) return missing("read a byte range of an object")
      return retried(readRange(key, offset, length)).pipe(Effect.mapError(failure(`read ${key}`)))
    },
    put: (key, bytes, contentType) => retried(sink.put(key, bytes, contentType)).pipe(Effect.asVoid, Effect.mapError(failure(`write ${key}`))),
    create: (key, bytes, contentType) => {
      const { create } = sink
      if (create === undefined) return missing("write an object only when its key is free")
      return retried(create(key, bytes, contentType)).pipe(
        Effect.map((outcome) => outcome === "created"),
        Effect.mapError(failure(`write ${key}`))
      )
    }
  }
}
