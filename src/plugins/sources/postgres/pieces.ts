import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { BatchSchema } from "../../../core/batch.js"
import type { RowFilter, SourceQuery } from "../../../core/plugin.js"

/** A chunk is read in at most this many statements, however small `batch_size` is against `chunk_size`. */
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
