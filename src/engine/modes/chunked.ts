import { numbersEveryPart } from "../../config/partition.js"
import * as Effect from "effect/Effect"
import type { UnitRecord } from "../../state/store.js"
import { formatLogicalType, type LogicalType } from "../../core/batch.js"
import { ConfigError, SourceError, type StateError } from "../../core/errors.js"
import { type PartRecord, schemaEntries, toPartRecord } from "../../core/manifest.js"
import { type ChunkRunner, type ChunkWork, inProcessRunner } from "./chunk-work.js"
import { chunkAttemptStem, chunkRunStem, makeNonce, partNamePattern } from "../../core/naming.js"
import { ChunkSpec, type ModePlan } from "../plan/model.js"
import type { RowFilter, SourceDescription } from "../../core/plugin.js"
import { baseQuery, type ExportContext, outputSchemaOf, planningPrimitives, requireColumn } from "./context.js"
import { retryUnit } from "./attempt.js"
import { planFingerprint } from "./fingerprint.js"
import { decodeStored } from "./stored.js"
import type { ModeOutcome, PreparedMode, RunJournal } from "./mode.js"
import type { UnitOutcome } from "./unit.js"
import { executeClaimed } from "./chunk-claims.js"
import { commitUnit, earlierAttempt } from "./checkpoint.js"
import { estimateOf, planHeader, statementOf } from "./planning.js"

/** A chunked export's settings (modes/kinds/chunked.ts decodes them). */
export interface ChunkedSettings {
  readonly kind: "chunked"
  /** Absent: the table's single integer primary key. */
  readonly chunkColumn?: string | undefined
  readonly chunkSize: number
  /** The Rust rivet's `chunk_count`: the chunk size derived from the key range so it makes about this many chunks. */
  readonly chunkCount?: number | undefined
  readonly parallel: number
  readonly checkpoint: boolean
  /** Attempts per chunk before the run fails (default: the retry policy's retries + 1). */
  readonly maxAttempts?: number | undefined
}

const INTEGER_KINDS = new Set(["int16", "int32", "int64"])

/** Integer keys, including decimal(p,0) (MySQL's bigint unsigned): chunk bounds are split as bigints either way. */
const isIntegerKey = (type: LogicalType): boolean =>
  INTEGER_KINDS.has(type.kind) || (type.kind === "decimal" && type.scale === 0)

/** Beyond this many chunks the plan itself becomes the problem (sparse keys): ask for a bigger chunk_size. */
const MAX_CHUNKS = 1_000_000


const filterOf = (column: string, spec: ChunkSpec): RowFilter =>
  "nulls" in spec ? { _tag: "IsNull", column } : { _tag: "Between", column, low: spec.low, high: spec.high }

const chunkColumnOf = (ctx: ExportContext, description: SourceDescription, configured: string | undefined) =>
  Effect.gen(function* () {
    if (configured !== undefined) return yield* requireColumn(ctx, description, configured, "chunk_column")
    const key = description.primaryKey
    const column = key.length === 1 ? description.schema.columns.find((c) => c.name === key[0]) : undefined
    if (!column || !isIntegerKey(column.type)) {
      return yield* new ConfigError({
        path: `export '${ctx.spec.name}'.chunk_column`,
        message: `is not set and the table has no single-column integer primary key to default to`,
        hint: "set chunk_column: to an integer column (ideally indexed), or use mode: keyset for other keys"
      })
    }
    yield* ctx.reporter.notice(
      ctx.spec.name,
      `chunk_column not set: using the primary key '${column.name}' (set chunk_column: to choose another)`
    )
    return column
  })

/** The chunk size of a run: `chunk_size`, or with `chunk_count` the key range divided into that many chunks. */
const sizeFor = (mode: ChunkedSettings, bounds: { readonly min: string | null; readonly max: string | null }): number => {
  if (mode.chunkCount === undefined || bounds.min === null || bounds.max === null) return mode.chunkSize
  const span = BigInt(bounds.max) - BigInt(bounds.min) + 1n
  const count = BigInt(mode.chunkCount)
  return Number((span + count - 1n) / count)
}

/** Splits [min, max] into chunk_size ranges, plus one chunk for NULL keys so no row is ever left out. */
const planChunks = (
  ctx: ExportContext,
  column: string,
  chunkSize: number,
  bounds: { readonly min: string | null; readonly max: string | null; readonly hasNulls: boolean }
): Effect.Effect<ReadonlyArray<ChunkSpec>, ConfigError> => {
  const specs: Array<ChunkSpec> = []
  if (bounds.min !== null && bounds.max !== null) {
    const min = BigInt(bounds.min)
    const max = BigInt(bounds.max)
    const size = BigInt(chunkSize)
    const count = (max - min) / size + 1n
    if (count > BigInt(MAX_CHUNKS)) {
      return Effect.fail(
        new ConfigError({
          path: `export '${ctx.spec.name}'.chunk_size`,
          message: `'${column}' spans ${min}..${max}: chunk_size ${chunkSize} would make ${count} chunks`,
          hint: `raise chunk_size to at least ${(max - min) / BigInt(MAX_CHUNKS) + 1n}, or use mode: keyset for sparse keys`
        })
      )
    }
    for (let low = min; low <= max; low += size) {
      const high = low + size - 1n < max ? low + size - 1n : max
      specs.push({ low: String(low), high: String(high) })
    }
  }
  if (bounds.hasNulls) specs.push({ nulls: true })
  return Effect.succeed(specs)
}

/**
 * The row filters of a read split into `chunkSize` key ranges of `column` from bounds read earlier: the first and
 * last ranges open-ended, so rows whose keys passed the bounds since still fall in one, and a piece for NULL keys.
 * For a read on a later snapshot than the bounds' (cdc's first-run snapshot). One piece, all rows, when the bounds
 * make one range or none.
 */
export const openChunkFilters = (
  ctx: ExportContext,
  column: string,
  chunkSize: number,
  bounds: { readonly min: string | null; readonly max: string | null; readonly hasNulls: boolean }
): Effect.Effect<ReadonlyArray<ReadonlyArray<RowFilter>>, ConfigError> =>
  Effect.map(planChunks(ctx, column, chunkSize, { ...bounds, hasNulls: false }), (specs) => {
    const ranges = specs.filter((spec): spec is Extract<ChunkSpec, { low: string }> => "low" in spec)
    if (ranges.length <= 1) return [[]]
    return [
      [{ _tag: "AtMost", column, value: ranges[0]!.high }],
      ...ranges.slice(1, -1).map((range): ReadonlyArray<RowFilter> => [filterOf(column, range)]),
      [{ _tag: "AtLeast", column, value: ranges.at(-1)!.low }],
      [{ _tag: "IsNull", column }]
    ]
  })

/** The chunk column of a chunked read: the configured one, else the table's single integer primary key. */
export const integerChunkColumn = (ctx: ExportContext, description: SourceDescription, configured: string | undefined) =>
  Effect.gen(function* () {
    const column = yield* chunkColumnOf(ctx, description, configured)
    if (!isIntegerKey(column.type)) {
      return yield* new ConfigError({
        path: `export '${ctx.spec.name}'.chunk_column`,
        message: `column '${column.name}' is ${formatLogicalType(column.type)}; chunks split integer keys`,
        hint: "choose an integer column, or use mode: keyset (any unique key, including text and composite keys)"
      })
    }
    return column
  })

/**
 * Key ranges of `chunk_size` values, each read by its own short statement, `parallel` at a time. Chunks that
 * find no rows write nothing. With `chunk_checkpoint` the plan and every committed chunk are recorded, so
 * `rivet run --resume` redoes only the chunks that had not committed.
 */
export const prepareChunked = Effect.fn("Modes.chunked")(function* (ctx: ExportContext, mode: ChunkedSettings) {
  const { describe, bounds } = yield* planningPrimitives(ctx)
  const base = baseQuery(ctx.spec)
  const description = yield* describe(base)
  const column = yield* integerChunkColumn(ctx, description, mode.chunkColumn)
  const schema = yield* outputSchemaOf(ctx, description.schema)
  // Workers of one run must agree on `parallel` too: it is the cap on the run's live claims across all of them.
  const fingerprint = planFingerprint(ctx, {
    mode: "chunked",
    column: column.name,
    ...(mode.chunkCount === undefined ? { chunkSize: mode.chunkSize } : { chunkCount: mode.chunkCount }),
    ...(ctx.worker ? { parallel: mode.parallel } : {})
  })
  const chunkSpecs = Effect.flatMap(bounds(base, column.name), (range) =>
    planChunks(ctx, column.name, sizeFor(mode, range), range)
  )
  const queryOf = (spec: ChunkSpec) => ({ ...base, where: [filterOf(column.name, spec)] })
  const decodeSpec = decodeStored(ChunkSpec, ctx.spec.name, "chunk range")

  const plan = Effect.gen(function* () {
    const ranges = yield* chunkSpecs
    return {
      ...planHeader(ctx, fingerprint),
      columns: schemaEntries(schema),
      statements: ranges.map((spec) => statementOf(ctx, queryOf(spec))),
      estimated_rows: yield* estimateOf(ctx, base),
      chunks: {
        column: column.name,
        size: ranges.length === 0 || !("low" in ranges[0]!) ? mode.chunkSize : Number(BigInt(ranges[0].high) - BigInt(ranges[0].low) + 1n),
        count: ranges.length,
        first: ranges[0] ?? null,
        last: ranges.at(-1) ?? null,
        ranges
      },
      naming: partNamePattern("chunk", ctx.spec.name, ctx.format.extension, numbersEveryPart(ctx.spec))
    } satisfies ModePlan
  })

  const execute = (journal: RunJournal, given?: ModePlan) =>
    Effect.gen(function* () {
      const { state, progress } = ctx
      const earlier = yield* earlierAttempt(ctx, journal)
      // A run killed before its plan was saved has no units: it is planned now, like a new run.
      const stored = earlier.units
      let chunks: ReadonlyArray<Chunk>
      if (stored.length === 0) {
        const specs = given?.chunks?.ranges ?? (yield* chunkSpecs)
        chunks = specs.map((spec, index) => ({
          unit: { index, spec: JSON.stringify(spec), status: "pending" as const, rows: 0 },
          spec
        }))
        if (mode.checkpoint) yield* state.savePlan(journal.runId, chunks.map((chunk) => chunk.unit))
      } else {
        chunks = yield* Effect.forEach(stored, (unit) => Effect.map(decodeSpec(unit.spec), (spec) => ({ unit, spec })))
      }
      const units = chunks.map((chunk) => chunk.unit)
      const pending = chunks.filter((chunk) => chunk.unit.status !== "done")
      yield* progress.setUnits({ done: units.length - pending.length, total: units.length, label: "chunks" })

      const runChunk = <E extends { readonly _tag: string }>(
        runner: ChunkRunner,
        { unit, spec }: Chunk,
        commit: (outcome: UnitOutcome) => Effect.Effect<void, StateError | E>
      ) =>
        Effect.gen(function* () {
          // One nonce for every attempt: a retried chunk overwrites the parts its failed attempt committed.
          const work: ChunkWork = {
            query: queryOf(spec),
            runId: journal.runId,
            naming: {
              exportName: ctx.spec.name,
              runStartedAt: journal.startedAt.toISOString(),
              chunk: unit.index,
              nonce: makeNonce(),
              extension: ctx.format.extension,
              sizeSplit: numbersEveryPart(ctx.spec)
            }
          }
          // The chunk may run in a worker thread, whose keys this thread never sees: the run's cleanup lists its stem.
          ctx.uploads?.notePrefix(
            chunkAttemptStem(ctx.spec.name, journal.startedAt, work.naming.chunk, work.naming.nonce)
          )
          // A chunk whose parts are all written is recorded even when another chunk's failure interrupts the run
          // meanwhile (two chunks overlap per lane): else --resume would read it again and leave its parts behind.
          return yield* Effect.uninterruptibleMask((restore) =>
            Effect.tap(restore(retryUnit(ctx, `chunk ${unit.index} (${describeChunk(column.name, spec)})`, runner(work))), commit)
          )
        }).pipe(
          Effect.mapError((error) =>
            error instanceof SourceError
              ? new SourceError({
                  source: error.source,
                  message: `chunk ${unit.index} (${describeChunk(column.name, spec)}): ${error.message}`,
                  hint: error.hint,
                  retryable: error.retryable,
                  code: error.code,
                  // The key range is read from the database too.
                  quoted: [describeChunk(column.name, spec), ...(error.quoted ?? [])]
                })
              : error
          )
        )

      const lanes = Math.min(mode.parallel, pending.length)
      const runnerFor = (lanes: number, overlap: boolean) => ctx.chunkRunner?.(lanes, overlap) ?? inProcessRunner(ctx, lanes, overlap)
      if (ctx.worker !== undefined) {
        const claimed = yield* executeClaimed(ctx, ctx.worker, journal, {
          parallel: mode.parallel,
          // A claim loop takes its next chunk only once its chunk is committed: a lane passed on early would let a
          // lost claim's interruption (which stops the lane's thread) hit the chunk another loop runs there.
          runner: runnerFor(mode.parallel, false),
          runChunk: (runner, unit, commit) =>
            Effect.flatMap(decodeSpec(unit.spec), (spec) => runChunk(runner, { unit, spec }, commit))
        })
        return {
          parts: claimed.parts ?? [],
          unrecorded: [],
          schema,
          sourceRows: [...claimed.finished.values()].reduce((sum, outcome) => sum + outcome.sourceRows, 0),
          partStem: chunkRunStem(ctx.spec.name, journal.startedAt),
          statements: [],
          ...(claimed.parts === undefined ? { publishedElsewhere: true } : {})
        } satisfies ModeOutcome
      }
      const finished = new Map(
        yield* Effect.scoped(
          Effect.gen(function* () {
            const runner = yield* runnerFor(lanes, true)
            const commit = (chunk: Chunk) => (outcome: UnitOutcome) => commitUnit(ctx, journal, mode.checkpoint, chunk.unit, outcome)
            return yield* Effect.forEach(
              pending,
              (chunk) => Effect.map(runChunk(runner, chunk, commit(chunk)), (outcome) => [chunk.unit.index, outcome] as const),
              // Twice the lanes: each lane's next chunk starts reading while the one before finishes its last part.
              { concurrency: 2 * lanes }
            )
          })
        )
      )
      const parts: Array<PartRecord> = []
      const unrecorded: Array<PartRecord> = []
      for (const unit of units) {
        const outcome = finished.get(unit.index)
        if (outcome) {
          parts.push(...outcome.parts)
          if (!mode.checkpoint) unrecorded.push(...outcome.parts)
        } else {
          parts.push(...earlier.parts.filter((part) => part.unit === unit.index).map(toPartRecord))
        }
      }
      return {
        parts,
        unrecorded,
        schema,
        sourceRows: [...finished.values()].reduce((sum, outcome) => sum + outcome.sourceRows, 0),
        partStem: chunkRunStem(ctx.spec.name, journal.startedAt),
        statements: chunks
          .filter((chunk) => finished.has(chunk.unit.index))
          .map((chunk) => statementOf(ctx, queryOf(chunk.spec)))
      }
    })

  return {
    checkpointed: mode.checkpoint,
    fingerprint,
    plan,
    estimate: () => estimateOf(ctx, base),
    execute,
    partStemOf: (startedAt) => chunkRunStem(ctx.spec.name, startedAt)
  } satisfies PreparedMode
})

const describeChunk = (column: string, spec: ChunkSpec): string =>
  "nulls" in spec ? `${column} IS NULL` : `${column} ${spec.low}..${spec.high}`

/** A planned chunk: its state-store record and its key range. */
interface Chunk {
  readonly unit: UnitRecord
  readonly spec: ChunkSpec
}
