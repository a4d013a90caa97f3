import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type postgres from "postgres"
import type { BatchSchema } from "../../../core/batch.js"
import type { SourceError } from "../../../core/errors.js"
import { handOver } from "../../../core/owned-bytes.js"
import type { RenderDialect, RenderedChunk, RenderedOrBatches, SourceQuery } from "../../../core/plugin.js"
import { copyFailure, type CopyOut, copyOut } from "./copy-stream.js"
import { copyBytes, makeRowFixer, type RowFixer } from "./csv-native-fix.js"
import { type CsvCopy, csvCopyStatement } from "./csv-sql.js"
import { connectionClosed, type ErrorContext } from "./errors.js"
import { queryPieces, readPieces } from "./pieces.js"
import { openCopy, planStatement } from "./result.js"
import { attemptOn, connectionLost, openSession, type SessionSettings } from "./session.js"
import { renderForDisplay, renderStatement, stripTerminator } from "./statement.js"

/** A chunk is handed on at this many bytes, or at `batchSize` rows, whichever comes first. */
const CHUNK_BYTES = 1024 * 1024
/**
 * Chunks are cut from buffers of this size, one after the other: the engine joins adjacent chunks of one buffer
 * into a sink block without copying them (upload-parts.ts), where a buffer per chunk made it copy every byte.
 */
const SLAB_BYTES = 4 * CHUNK_BYTES
/** Chunks waiting for the consumer before the COPY is paused (backpressure through the socket). */
const MAX_PENDING = 2
const LF = 0x0a

/**
 * The COPY statement for `query` in Rivet's CSV dialect, or `undefined` when PostgreSQL cannot write this query's
 * CSV byte for byte: a `columns:` override (its decoders change values), a column type without an expression
 * (csv-sql.ts), or a single column (COPY quotes a lone `\.` field there, the CSV format does not).
 */
export const csvStatement = (query: SourceQuery, schema: BatchSchema): CsvCopy | undefined => {
  if (query.columnTypes.size > 0 || schema.columns.length < 2) return undefined
  // Filter values inlined as literals (COPY takes no parameters), read like the untyped parameters they replace;
  // the session forces standard_conforming_strings so that quoteLiteral's quoting holds.
  return csvCopyStatement(stripTerminator(renderForDisplay(query)), schema)
}

/**
 * Reads `COPY … TO STDOUT (FORMAT csv)` into chunks of whole rows. PostgreSQL sends each row of a COPY TO as one
 * CopyData message (a quoted line break stays inside its message), and the COPY reader hands over one message at a
 * time, so rows are counted per message; a message not ending in a line feed fails the read rather than being
 * miscounted. Columns left in PostgreSQL's own text are rewritten by `fixer` on the way into the chunk.
 */
const copyChunks = (
  connection: postgres.TransactionSql,
  text: string,
  fixer: RowFixer | undefined,
  batchSize: number,
  context: ErrorContext
): Effect.Effect<Stream.Stream<RenderedChunk, SourceError>, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const maxRows = Math.max(1, batchSize)
    let buffer = Buffer.allocUnsafe(SLAB_BYTES)
    // The current chunk is buffer[start, used).
    let start = 0
    let used = 0
    let rows = 0
    const pending: Array<RenderedChunk> = []
    let copy: CopyOut | undefined = undefined
    let ended = false
    let failure: SourceError | undefined
    let wake: (() => void) | undefined

    const flush = () => {
      if (rows === 0) return
      pending.push({ bytes: buffer.subarray(start, used), rows })
      start = used
      rows = 0
      if (pending.length >= MAX_PENDING) copy?.pause()
      wake?.()
    }

    // No more chunks are cut from this buffer: the runtime may free it once it has written them all.
    const retire = () => handOver([buffer.subarray(0, used)])

    const growth = fixer?.maxGrowth ?? 0
    const onChunk = (bytes: Uint8Array, from: number, end: number) => {
      if (end <= from || bytes[end - 1] !== LF) {
        throw new Error("a CopyData message of COPY … (FORMAT csv) did not end with a row")
      }
      const room = end - from + growth
      if (used + room > buffer.length) {
        flush()
        retire()
        buffer = Buffer.allocUnsafe(Math.max(SLAB_BYTES, room))
        start = 0
        used = 0
      }
      used = (fixer?.write ?? copyBytes)(bytes, from, end, buffer, used)
      rows++
      if (rows >= maxRows || used - start >= CHUNK_BYTES) flush()
    }

    yield* attemptOn(connection, context, "configuring the session", () =>
      connection.unsafe("SET LOCAL standard_conforming_strings = on").simple()
    )
    copy = yield* copyOut(connection, text, onChunk, context)
    if (pending.length >= MAX_PENDING) copy.pause()
    const running = copy
    running.done.then(
      () => {
        flush()
        retire()
        ended = true
        wake?.()
      },
      (cause: unknown) => {
        void connectionLost(connection).then((lost) => {
          failure = lost ? connectionClosed(context, "reading rows") : copyFailure(cause, context, "reading rows")
          wake?.()
        })
      }
    )

    const pull: Effect.Effect<RenderedChunk, Option.Option<SourceError>> = Effect.async((resume) => {
      const attempt = () => {
        wake = undefined
        const chunk = pending.shift()
        if (chunk !== undefined) {
          if (pending.length < MAX_PENDING) running.resume()
          return resume(Effect.succeed(chunk))
        }
        if (failure !== undefined) return resume(Effect.fail(Option.some(failure)))
        if (ended) return resume(Effect.fail(Option.none()))
        running.resume()
        wake = attempt
      }
      attempt()
      return Effect.sync(() => {
        wake = undefined
      })
    })
    return Stream.repeatEffectOption(pull)
  })

/**
 * `SourceDriverShape.openRendered` for PostgreSQL: the export's snapshot and settings as `openResult`, then — when
 * the query can be rendered (see `csvStatement`) — its rows as PostgreSQL writes them with COPY, else the batches
 * on the same transaction.
 */
export const openRendered = (
  pool: postgres.Sql,
  query: SourceQuery,
  dialect: RenderDialect,
  settings: SessionSettings,
  context: ErrorContext
): Effect.Effect<RenderedOrBatches, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const statement = renderStatement(query)
    const connection = yield* openSession(pool, settings, context)
    const { plans, schema } = yield* planStatement(connection, query, statement, context)
    const copies = dialect === "csv" ? queryPieces(query, schema).map((piece) => csvStatement(piece, schema)) : []
    if (copies.length === 0 || !copies.every((copy) => copy !== undefined)) {
      const batches = yield* openCopy(connection, query, plans, schema, context)
      return { _tag: "Batches", result: { schema, batches } }
    }
    const fixer = makeRowFixer(copies[0]!.fixes)
    const chunks = yield* readPieces(copies, (copy) => copyChunks(connection, copy.text, fixer, query.batchSize, context))
    return { _tag: "Rendered", schema, chunks }
  })
