import * as Effect from "effect/Effect"
import type { RivetError } from "../../core/errors.js"
import { runAttempt } from "./attempt.js"
import type { UnitOutcome, UnitWork } from "./unit.js"
import type { UnitContext } from "./unit-context.js"
import { chunkPartName } from "../../core/naming.js"
import type { SourceQuery } from "../../core/plugin.js"

/** What names a chunk's parts — plain data, so it can cross to a worker thread (a key function cannot). */
export interface ChunkNaming {
  readonly exportName: string
  /** The run's start, ISO 8601 (UTC). */
  readonly runStartedAt: string
  readonly chunk: number
  readonly nonce: string
  readonly extension: string
  /** `max_file_size` is set: every part gets a `_p{N}` suffix. */
  readonly sizeSplit: boolean
}

/** One chunk to read and write. */
export interface ChunkWork {
  readonly query: SourceQuery
  readonly naming: ChunkNaming
  readonly runId: string
}

/** Runs one chunk and reports its parts; where it runs (this thread or a worker) is the runner's business. */
export type ChunkRunner = (work: ChunkWork) => Effect.Effect<UnitOutcome, RivetError>

/** The key of a chunk's part N (the same on both sides of a thread boundary). */
export const chunkKeyOf = (naming: ChunkNaming) => {
  const startedAt = new Date(naming.runStartedAt)
  return (part: number): string =>
    chunkPartName(naming.exportName, startedAt, naming.chunk, naming.nonce, naming.extension, part, naming.sizeSplit)
}

/** The unit a chunk is run as (the same on both sides of a thread boundary). */
export const chunkUnitWork = (work: ChunkWork): UnitWork => ({
  unit: { kind: "chunk", index: work.naming.chunk },
  query: work.query,
  keyOf: chunkKeyOf(work.naming),
  runId: work.runId,
  runStartedAt: new Date(work.naming.runStartedAt)
})

/**
 * Runs `use` with what `take` gives (a permit to read, an idle lane) and gives it back once: with `early`, as soon as
 * the chunk's source is read (`use` passes `read` on as the unit's `onSourceEnd`), else — and at the latest — when
 * the chunk ends. Given back early, the next chunk reads while the one before finishes its last part: the server is
 * not left idle meanwhile.
 */
export const heldWhileReading = <R, A, E>(
  take: Effect.Effect<R>,
  giveBack: (held: R) => Effect.Effect<unknown>,
  early: boolean,
  use: (held: R, read: Effect.Effect<void>) => Effect.Effect<A, E>
): Effect.Effect<A, E> =>
  Effect.uninterruptibleMask((restore) =>
    Effect.flatMap(restore(take), (held) =>
      // Uninterruptible: an interruption between `once`'s flag and the give-back would lose the permit or lane.
      Effect.flatMap(Effect.map(Effect.once(Effect.asVoid(giveBack(held))), Effect.uninterruptible), (back) =>
        Effect.ensuring(restore(use(held, early ? back : Effect.void)), back)
      )
    )
  )

/** Runs a chunk in the calling thread; only a successful attempt's counts join the export's (see runAttempt). */
export const runChunkHere = (ctx: UnitContext, work: ChunkWork, read: Effect.Effect<void>): Effect.Effect<UnitOutcome, RivetError> =>
  runAttempt(ctx, { ...chunkUnitWork(work), onSourceEnd: () => read })

/**
 * Runs chunks in the calling thread, at most `readers` of them reading at once; with `overlap`, a chunk's permit
 * passes on as soon as it is read (see heldWhileReading).
 */
export const inProcessRunner = (ctx: UnitContext, readers: number, overlap: boolean): Effect.Effect<ChunkRunner> =>
  Effect.map(
    Effect.makeSemaphore(readers),
    (permits): ChunkRunner =>
      (work) =>
        heldWhileReading(permits.take(1), () => permits.release(1), overlap, (_, read) => runChunkHere(ctx, work, read))
  )
