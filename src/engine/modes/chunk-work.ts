import type * as Effect from "effect/Effect"
import type { RivetError } from "../../core/errors.js"
import { runAttempt } from "./attempt.js"
import type { UnitContext, UnitOutcome, UnitWork } from "./run-unit.js"
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

/** Runs chunks in the calling thread; only a successful attempt's counts join the export's (see runAttempt). */
export const inProcessRunner =
  (ctx: UnitContext): ChunkRunner =>
  (work) =>
    runAttempt(ctx, chunkUnitWork(work))
