import { createHash, type Hash } from "node:crypto"
import * as Cause from "effect/Cause"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import * as SynchronizedRef from "effect/SynchronizedRef"
import { BlockBuffers } from "./block-buffers.js"
import type { PartPiece } from "./encode-parts.js"
import type { SinkError } from "../core/errors.js"
import type { PartRecord } from "../core/manifest.js"
import type { SinkDriverShape, UploadHandle } from "../core/plugin.js"
import { type RetryPolicy, withRetry } from "../core/retry.js"
import { makePartSpans } from "./part-spans.js"
import { abortPendingAt } from "./upload-cleanup.js"

/** A block of one part, ready for the sink. The last block of a part carries the part's totals. */
interface Block {
  readonly part: number
  readonly index: number
  readonly bytes: Uint8Array
  readonly last?: { readonly rows: number; readonly size: number; readonly sha256: string }
}

export interface UploadOptions {
  /** Tags the parts' spans and metrics. */
  readonly exportName: string
  readonly sink: SinkDriverShape
  readonly contentType: string
  readonly keyOf: (part: number) => string
  readonly retry: RetryPolicy
  /** A sink call failed and is tried again. */
  readonly onRetry: Effect.Effect<void>
  /** Runs once a part is visible under its final key, before the next part is committed (it may wait). */
  readonly onCommitted: (record: PartRecord) => Effect.Effect<void>
  /** A block of `count` bytes was written. */
  readonly onBytes: (count: number) => Effect.Effect<void>
  /** Runs before the first attempt to begin a multipart upload at `key`, so the run can clean up after it. */
  readonly onBegin?: ((key: string) => Effect.Effect<void>) | undefined
  /** The partition values a part holds, recorded with it (partitioned exports). */
  readonly partitionOf?: ((part: number) => PartRecord["partition"]) | undefined
}

/** One part's bytes not yet cut into a block, and its running totals. */
interface PartBytes {
  readonly pending: Array<Uint8Array>
  pendingLength: number
  index: number
  size: number
  readonly hash: Hash
}

// Takes the first `length` pending bytes. A block inside one chunk is a view of it; only a block spanning
// chunks is copied, and only its own bytes (the rest stays as views).
const take = (state: PartBytes, length: number, buffers: BlockBuffers): Uint8Array => {
  const { pending } = state
  const first = pending[0]
  if (first !== undefined && first.length >= length) {
    if (first.length === length) pending.shift()
    else pending[0] = first.subarray(length)
    state.pendingLength -= length
    buffers.viewed(first)
    return first.subarray(0, length)
  }
  const block = buffers.block(length)
  let offset = 0
  while (offset < length) {
    const chunk = pending[0]!
    const wanted = length - offset
    if (chunk.length <= wanted) {
      block.set(chunk, offset)
      offset += chunk.length
      pending.shift()
      buffers.copied(chunk, chunk.length)
    } else {
      block.set(chunk.subarray(0, wanted), offset)
      pending[0] = chunk.subarray(wanted)
      offset = length
      buffers.copied(chunk, wanted)
    }
  }
  state.pendingLength -= length
  return block
}

// Queues `bytes` after `pending`, as one view with the last pending bytes when they lie right before `bytes` in the
// same buffer (a source that cuts its chunks from one buffer): a block across them is then a view, not a copy.
const appendPending = (pending: Array<Uint8Array>, bytes: Uint8Array): void => {
  const last = pending.at(-1)
  if (last !== undefined && last.buffer === bytes.buffer && last.byteOffset + last.length === bytes.byteOffset) {
    pending[pending.length - 1] = new Uint8Array(last.buffer, last.byteOffset, last.length + bytes.length)
  } else pending.push(bytes)
}

/**
 * Cuts each part's bytes into `blockSize` blocks, hashing and counting them on the way. Pieces of several parts
 * may interleave (a partitioned export has a part open per partition): each part keeps its own pending bytes.
 */
const toBlocks = (blockSize: number, buffers: BlockBuffers) => {
  const parts = new Map<number, PartBytes>()
  const stateOf = (part: number): PartBytes => {
    let state = parts.get(part)
    if (state === undefined) {
      state = { pending: [], pendingLength: 0, index: 0, size: 0, hash: createHash("sha256") }
      parts.set(part, state)
    }
    return state
  }

  return (piece: PartPiece): Array<Block> => {
    const state = stateOf(piece.part)
    if (piece._tag === "bytes") {
      appendPending(state.pending, piece.bytes)
      state.pendingLength += piece.bytes.length
      state.size += piece.bytes.length
      state.hash.update(piece.bytes)
      const blocks: Array<Block> = []
      while (state.pendingLength > blockSize) blocks.push({ part: piece.part, index: state.index++, bytes: take(state, blockSize, buffers) })
      return blocks
    }
    parts.delete(piece.part)
    const last = { rows: piece.rows, size: state.size, sha256: `sha256:${state.hash.digest("hex")}` }
    return [{ part: piece.part, index: state.index, bytes: take(state, state.pendingLength, buffers), last }]
  }
}

/**
 * Streams encoded parts into the sink and emits a record per committed part. A part that fits in one
 * block is written with a single `put`; larger parts go block by block (up to `concurrency` at once)
 * and are completed after their last block. Failed blocks are retried by the runtime's policy; any
 * upload still open when the scope closes with a failure or interruption is aborted, so nothing
 * half-written ever appears under a final key. Where a `begin` failed, was retried or was interrupted, the
 * destination may hold an upload without a handle: its key's pending uploads are listed and aborted once the
 * part is complete, or when the scope closes.
 */
export const uploadParts = <E, R>(
  pieces: Stream.Stream<PartPiece, E, R>,
  options: UploadOptions
): Effect.Effect<ReadonlyArray<PartRecord>, E | SinkError, R | Scope.Scope> =>
  Effect.gen(function* () {
    const { sink } = options
    const buffers = new BlockBuffers(sink.capabilities.releasesBytes === true)
    // The begin of each part's upload, shared by its blocks: one `begin` per part however many blocks ask at once.
    const open = yield* SynchronizedRef.make(new Map<number, Effect.Effect<UploadHandle, SinkError>>())
    const begun = new Map<number, UploadHandle>()
    // Parts whose `begin` failed, was retried or was interrupted at least once, by key: the destination may hold an
    // upload no handle knows (it created one, the response was lost), to be found by listing and aborted.
    const unsure = new Map<number, string>()

    const abortUnknown = (part: number, key: string) =>
      abortPendingAt(sink, key, options.retry).pipe(
        Effect.tap(() => Effect.sync(() => unsure.delete(part))),
        // Not the unit's failure: its data is unaffected, and the export's own cleanup lists these keys again.
        Effect.ignore
      )

    yield* Effect.addFinalizer((exit) =>
      Exit.isSuccess(exit)
        ? Effect.forEach([...unsure], ([part, key]) => abortUnknown(part, key), { discard: true })
        : // A transient failure must not leave an S3 multipart upload behind for good: no later run finds it.
          Effect.zipRight(
            Effect.forEach(
              [...begun],
              ([part, handle]) =>
                withRetry(handle.abort, options.retry, () => {}).pipe(
                  Effect.catchAll(() => Effect.sync(() => unsure.set(part, options.keyOf(part))))
                ),
              { discard: true }
            ),
            Effect.forEach([...unsure], ([part, key]) => abortUnknown(part, key), { discard: true })
          )
    )

    const spans = yield* makePartSpans(options.exportName)
    const retried = <A>(operation: Effect.Effect<A, SinkError>, part: number) =>
      withRetry(spans.within(part)(operation), options.retry, () => Effect.zipRight(options.onRetry, spans.retried(part)))

    const handleOf = (part: number): Effect.Effect<UploadHandle, SinkError> =>
      SynchronizedRef.modifyEffect(open, (handles) => {
        const existing = handles.get(part)
        if (existing) return Effect.succeed([existing, handles] as const)
        const key = options.keyOf(part)
        const attempt = sink.begin(key, options.contentType).pipe(
          Effect.onExit((exit) => (Exit.isFailure(exit) ? Effect.sync(() => unsure.set(part, key)) : Effect.void))
        )
        const started = retried(attempt, part).pipe(Effect.tap((handle) => Effect.sync(() => begun.set(part, handle))))
        return Effect.zipRight(options.onBegin?.(key) ?? Effect.void, Effect.cached(started)).pipe(
          Effect.map((cached) => [cached, new Map(handles).set(part, cached)] as const)
        )
      }).pipe(Effect.flatten)

    const writeBlock = (block: Block): Effect.Effect<Block, SinkError> =>
      Effect.as(
        block.last && block.index === 0
          ? retried(sink.put(options.keyOf(block.part), block.bytes, options.contentType), block.part)
          : Effect.flatMap(handleOf(block.part), (handle) => retried(handle.writeBlock(block.index, block.bytes), block.part)),
        block
      ).pipe(
        Effect.tap(() => {
          const written = block.bytes.length
          buffers.written(block.bytes)
          return options.onBytes(written)
        })
      )

    const commit = (block: Block): Effect.Effect<Option.Option<PartRecord>, SinkError> =>
      Effect.gen(function* () {
        if (!block.last) return Option.none()
        if (block.index > 0) {
          const handle = yield* handleOf(block.part)
          yield* retried(handle.complete(block.index + 1), block.part)
          begun.delete(block.part)
          yield* SynchronizedRef.update(open, (handles) => {
            const rest = new Map(handles)
            rest.delete(block.part)
            return rest
          })
          // The part's own upload is complete: any upload still pending at its key is one a lost response created.
          const lost = unsure.get(block.part)
          if (lost !== undefined) yield* abortUnknown(block.part, lost)
        }
        const record: PartRecord = {
          path: options.keyOf(block.part),
          rows: block.last.rows,
          size_bytes: block.last.size,
          content_fingerprint: block.last.sha256,
          ...(options.partitionOf ? { partition: options.partitionOf(block.part) } : {})
        }
        yield* spans.committed(block.part, record)
        yield* options.onCommitted(record)
        return Option.some(record)
      })

    // Blocks are written up to `concurrency` at once and committed in stream order. The writes are forked into the
    // unit's scope by hand: Stream.mapEffect with `concurrency` costs ~0.5 ms of CPU and ~100 KB of garbage per
    // element, which a partitioned export with thousands of small parts pays per part. A write that fails stops
    // the unit at once (`failed`), not when its turn to commit comes; the others are interrupted with the scope.
    const scope = yield* Effect.scope
    const concurrency = Math.max(1, sink.capabilities.concurrency)
    const failed = yield* Deferred.make<never, SinkError>()
    const write = (block: Block) =>
      writeBlock(block).pipe(
        Effect.tapErrorCause((cause) => (Cause.isInterruptedOnly(cause) ? Effect.void : Deferred.failCause(failed, cause)))
      )
    const writing: Array<Fiber.RuntimeFiber<Block, SinkError>> = []
    const records: Array<PartRecord> = []
    const commitOldest = Effect.suspend(() => Fiber.join(writing.shift()!)).pipe(
      Effect.flatMap(commit),
      Effect.map((record) => {
        if (Option.isSome(record)) records.push(record.value)
      })
    )
    const blocks = Stream.mapConcat(pieces, toBlocks(sink.capabilities.blockSize, buffers)).pipe(Stream.interruptWhen(Deferred.await(failed)))
    yield* Stream.runForEach(blocks, (block) =>
      Effect.gen(function* () {
        if (block.index === 0) yield* spans.start(block.part, options.keyOf(block.part))
        while (writing.length >= concurrency) yield* commitOldest
        writing.push(yield* Effect.forkIn(write(block), scope))
      })
    )
    while (writing.length > 0) yield* commitOldest
    return records
  })
