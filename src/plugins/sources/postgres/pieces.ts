import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Batch, BatchSchema } from "../../../core/batch.js"
import { valueAt } from "../../../core/columns/values.js"
import { isOrderable, keyText } from "../../../core/key-text.js"
import type { RowFilter, SourceQuery } from "../../../core/plugin.js"

/** A chunk or page is read in at most this many statements, however small `batch_size` is against its size. */
const MAX_PIECES = 64

type Between = Extract<RowFilter, { readonly _tag: "Between" }>

const INTEGER = /^-?\d+$/

/**
 * A chunk's rows as several queries run one after the other on its transaction, each covering at most `batch_size`
 * values of the chunk's integer key (and at most `MAX_PIECES` of them): one COPY of a whole chunk holds the server
 * for as long as Rivet takes to read it — about a second for 100 000 wide rows — while its pieces each take a
 * fraction of that, as the fetches of a cursor did. The rows, their order within each piece and the snapshot are
 * the same. Anything else — no single `BETWEEN` on an int2/int4/int8 column, a `LIMIT`, an order by another column,
 * a chunk no wider than one piece — stays one query.
 */
export const queryPieces = (query: SourceQuery, schema: BatchSchema): ReadonlyArray<SourceQuery> => {
  const where = query.where ?? []
  const ranges = where.filter((filter): filter is Between => filter._tag === "Between")
  if (ranges.length !== 1 || query.limit !== undefined) return [query]
  const range = ranges[0]!
  const kind = schema.columns.find((column) => column.name === range.column)?.type.kind
  if (kind !== "int16" && kind !== "int32" && kind !== "int64") return [query]
  if ((query.orderBy ?? []).some((ref) => ref !== range.column)) return [query]
  if (!INTEGER.test(range.low) || !INTEGER.test(range.high)) return [query]
  const low = BigInt(range.low)
  const high = BigInt(range.high)
  const span = high - low + 1n
  const batch = BigInt(Math.max(1, query.batchSize))
  const fewest = (span + BigInt(MAX_PIECES) - 1n) / BigInt(MAX_PIECES)
  const width = batch > fewest ? batch : fewest
  if (span <= width) return [query]
  const queries: Array<SourceQuery> = []
  for (let from = low; from <= high; from += width) {
    const to = from + width - 1n < high ? from + width - 1n : high
    const piece: Between = { ...range, low: `${from}`, high: `${to}` }
    queries.push({ ...query, where: where.map((filter) => (filter === range ? piece : filter)) })
  }
  return queries
}

/**
 * The stream of every piece's rows, in order: a single piece opened at once in the caller's scope (as before), more
 * of them each opened when the one before has ended, in a scope that closes with its stream (its COPY done, or
 * cancelled when the reading stops early).
 */
export const readPieces = <P, A, E>(
  pieces: ReadonlyArray<P>,
  open: (piece: P) => Effect.Effect<Stream.Stream<A, E>, E, Scope.Scope>
): Effect.Effect<Stream.Stream<A, E>, E, Scope.Scope> =>
  pieces.length === 1
    ? open(pieces[0]!)
    : Effect.succeed(Stream.flatMap(Stream.fromIterable(pieces), (piece) => Stream.unwrapScoped(open(piece))))

/**
 * A keyset page (`uniqueOrder`, its `orderBy` a unique key) as several queries run one after the other on its
 * transaction, each of at most `batch_size` rows (and at most `MAX_PIECES` of them) continuing after the last key
 * the one before read: the same rows in the same order as the page's one `LIMIT` query, without holding the server
 * for as long as Rivet takes to read the whole page. Undefined when the page is one query anyway: no `uniqueOrder`,
 * no `limit` above one piece, or an order by a coalesced or unorderable column. `nullKey` is the failure for a key
 * that turns out NULL, which a unique key cannot be.
 */
export const readKeyedPieces = <E>(
  query: SourceQuery,
  schema: BatchSchema,
  open: (piece: SourceQuery) => Effect.Effect<Stream.Stream<Batch, E>, E, Scope.Scope>,
  nullKey: (column: string) => E
): Effect.Effect<Stream.Stream<Batch, E>, E, Scope.Scope> | undefined => {
  const limit = query.limit
  const order = query.orderBy ?? []
  if (query.uniqueOrder !== true || limit === undefined || order.length === 0) return undefined
  const keys = order.map((ref) => (typeof ref === "string" ? schema.columns.findIndex((column) => column.name === ref) : -1))
  if (keys.some((index) => index < 0 || !isOrderable(schema.columns[index]!.type))) return undefined
  const width = Math.max(1, query.batchSize, Math.ceil(limit / MAX_PIECES))
  if (limit <= width) return undefined

  const pieceAfter = (after: ReadonlyArray<string> | undefined, read: number): SourceQuery => ({
    ...query,
    // Added to the page's own filters: the last key read is past the page's start, so both hold.
    where: after === undefined ? query.where : [...(query.where ?? []), { _tag: "After", columns: order, values: after }],
    limit: Math.min(width, limit - read)
  })
  /** The key of a batch's last row, or the name of its key column that is NULL. */
  const lastKey = (batch: Batch): ReadonlyArray<string> | string => {
    const values: Array<string> = []
    for (const index of keys) {
      const column = schema.columns[index]!
      const text = keyText(column.type, valueAt(batch.columns[index]!, column.type, batch.rowCount - 1))
      if (text === undefined) return column.name
      values.push(text)
    }
    return values
  }
  /** A piece's batches, then the pieces after it while it was full and the page is not. */
  const fromPiece = (batches: Stream.Stream<Batch, E>, readBefore: number): Stream.Stream<Batch, E> =>
    Stream.suspend(() => {
      let rows = 0
      // Read as each batch passes: further on, its buffers may be handed to another thread.
      let last: ReadonlyArray<string> | string | undefined
      const counted = Stream.tap(batches, (batch) =>
        Effect.sync(() => {
          rows += batch.rowCount
          if (batch.rowCount > 0) last = lastKey(batch)
        })
      )
      const rest = Stream.unwrap(
        Effect.suspend(() => {
          const read = readBefore + rows
          // A piece short of `width` rows was the page's last one (it asked for `width`, or for all the page had left).
          if (last === undefined || read >= limit || rows < width) return Effect.succeed(Stream.empty)
          if (typeof last === "string") return Effect.fail(nullKey(last))
          const next = pieceAfter(last, read)
          // Each piece in a scope of its own, closed when its rows end (not when the page's do).
          return Effect.succeed(fromPiece(Stream.unwrapScoped(open(next)), read))
        })
      )
      return Stream.concat(counted, rest)
    })

  return Effect.map(open(pieceAfter(undefined, 0)), (batches) => fromPiece(batches, 0))
}
