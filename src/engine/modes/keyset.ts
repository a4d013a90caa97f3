import { numbersEveryPart } from "../../config/partition.js"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Fiber from "effect/Fiber"
import * as Schema from "effect/Schema"
import { formatLogicalType } from "../../core/batch.js"
import { ConfigError, type RivetError, SourceError } from "../../core/errors.js"
import { isOrderable } from "../../core/key-text.js"
import { type PartRecord, schemaEntries, toPartRecord } from "../../core/manifest.js"
import { pagePartName, pageRunStem, partNamePattern } from "../../core/naming.js"
import type { ModePlan } from "../plan/model.js"
import type { SourceQuery } from "../../core/plugin.js"
import { baseQuery, type ExportContext, outputSchemaOf, planningPrimitives, requireColumn } from "./context.js"
import { retryUnit, runAttempt } from "./attempt.js"
import { planFingerprint } from "./fingerprint.js"
import { commitUnit, earlierAttempt } from "./checkpoint.js"
import { decodeStored } from "./stored.js"
import type { PreparedMode, RunJournal } from "./mode.js"
import type { SourceRead, UnitOutcome } from "./unit.js"
import { estimateOf, planHeader, statementOf } from "./planning.js"

/** A keyset export's settings (modes/kinds/keyset.ts decodes them). */
export interface KeysetSettings {
  readonly kind: "keyset"
  /** Absent: the table's primary key. */
  readonly keyColumns?: ReadonlyArray<string> | undefined
  readonly pageSize: number
  readonly checkpoint: boolean
  /** Attempts per page before the run fails (default: the retry policy's retries + 1). */
  readonly maxAttempts?: number | undefined
}

/** A committed page's last key, one text value per key column (JSON in the state store). */
const StoredKey = Schema.Array(Schema.String)

/**
 * Pages of `page_size` rows in key order, each its own short statement
 * (`WHERE (k1, k2) > (last…) ORDER BY k1, k2 LIMIT n`). A page's part is named after the run and the page number, so
 * a page re-read after a crash overwrites its own part. With `chunk_checkpoint` every committed page is recorded
 * with its last key, and `--resume` continues after the last committed page.
 */
export const prepareKeyset = Effect.fn("Modes.keyset")(function* (ctx: ExportContext, mode: KeysetSettings) {
  const { describe, bounds } = yield* planningPrimitives(ctx)
  const base = baseQuery(ctx.spec)
  const description = yield* describe(base)
  const keys = mode.keyColumns ?? description.primaryKey
  if (keys.length === 0) {
    return yield* new ConfigError({
      path: `export '${ctx.spec.name}'.key_columns`,
      message: "is not set and the table has no primary key to default to",
      hint: "name a unique, non-null key, e.g. key_columns: [id]"
    })
  }
  if (mode.keyColumns === undefined) {
    yield* ctx.reporter.notice(ctx.spec.name, `key_columns not set: paging by the primary key (${keys.join(", ")})`)
  }
  for (const key of keys) {
    const column = yield* requireColumn(ctx, description, key, "key_columns")
    if (!isOrderable(column.type)) {
      return yield* new ConfigError({
        path: `export '${ctx.spec.name}'.key_columns`,
        message: `column '${key}' is ${formatLogicalType(column.type)}, which cannot order rows`,
        hint: "page by integer, decimal, text, uuid, date or timestamp columns"
      })
    }
  }
  const schema = yield* outputSchemaOf(ctx, description.schema)
  const fingerprint = planFingerprint(ctx, { mode: "keyset", keys, pageSize: mode.pageSize })
  const pageQuery = (after: ReadonlyArray<string> | undefined): SourceQuery => ({
    ...base,
    where: after ? [{ _tag: "After", columns: keys, values: after }] : [],
    orderBy: keys,
    limit: mode.pageSize,
    uniqueOrder: true
  })

  // Rows whose key is NULL are never "after" any key: paging would silently leave them out.
  const refuseNullKeys = Effect.forEach(keys, (key) =>
    Effect.flatMap(bounds(base, key), ({ hasNulls }) =>
      hasNulls
        ? new ConfigError({
            path: `export '${ctx.spec.name}'.key_columns`,
            message: `column '${key}' has NULL values, which keyset pages would leave out`,
            hint: "page by NOT NULL columns, or use mode: chunked (it exports NULL keys in a chunk of their own)"
          })
        : Effect.void
    ),
    { discard: true }
  )

  // Later pages start after the last key of the page before: only the first statement is known in advance.
  const plan = Effect.gen(function* () {
    yield* refuseNullKeys
    return {
      ...planHeader(ctx, fingerprint),
      columns: schemaEntries(schema),
      statements: [statementOf(ctx, pageQuery(undefined))],
      estimated_rows: yield* estimateOf(ctx, base),
      pages: { key_columns: keys, page_size: mode.pageSize },
      naming: partNamePattern("page", ctx.spec.name, ctx.format.extension, numbersEveryPart(ctx.spec))
    } satisfies ModePlan
  })

  const execute = (journal: RunJournal) =>
    Effect.gen(function* () {
      const { progress, spec } = ctx
      yield* refuseNullKeys
      const parts: Array<PartRecord> = []
      const unrecorded: Array<PartRecord> = []
      let page = 0
      let after: ReadonlyArray<string> | undefined
      if (journal.resumed) {
        const earlier = yield* earlierAttempt(ctx, journal)
        parts.push(...earlier.parts.map(toPartRecord))
        const last = earlier.units.filter((unit) => unit.status === "done").at(-1)
        if (last?.lastKey !== undefined) {
          page = last.index + 1
          after = yield* decodeStored(StoredKey, ctx.spec.name, "last key of page " + last.index)(last.lastKey)
        }
      }
      yield* progress.setUnits({ done: page, label: "pages" })
      let sourceRows = 0
      const statements: Array<string> = []

      // A page is forked, and the next one starts as soon as it is read (its last key known) while it finishes its
      // part. Each page is committed as soon as it is done, in order: a chain of forked commits, each waiting for the
      // one before. What a page read is known when its source ends, or when the page ends without that (a transform
      // that stopped reading early).
      const startPage = (current: number, query: SourceQuery) =>
        Effect.gen(function* () {
          const read = yield* Deferred.make<SourceRead>()
          const fiber = yield* Effect.fork(
            retryUnit(
              ctx,
              `page ${current}`,
              runAttempt(ctx, {
                unit: { kind: "page", index: current },
                query,
                runId: journal.runId,
                track: keys,
                runStartedAt: journal.startedAt,
                keyOf: (part) =>
                  pagePartName(spec.name, journal.startedAt, current, ctx.format.extension, part, numbersEveryPart(spec)),
                onSourceEnd: (done) => Deferred.succeed(read, done)
              })
            )
          )
          const whenRead = Effect.raceFirst(Deferred.await(read), Fiber.join(fiber))
          return { fiber, whenRead }
        })
      const commit = (current: number, from: ReadonlyArray<string> | undefined, fiber: Fiber.Fiber<UnitOutcome, RivetError>, read: SourceRead) =>
        Effect.gen(function* () {
          const outcome = yield* Fiber.join(fiber)
          const lastKey = JSON.stringify(outcome.last)
          // The next page started after the key this page's source ended on; an attempt that read the page again
          // after that (a retried failure) must have ended on the same key, or the pages would not join up.
          if (lastKey !== JSON.stringify(read.last)) {
            return yield* new SourceError({
              source: ctx.source.label,
              message: `export '${spec.name}': page ${current} was read again and ended on another key than the page after it started from`,
              hint: "run the export again (with --resume for a checkpointed run)",
              retryable: false
            })
          }
          const unit = { index: current, spec: JSON.stringify({ after: from ?? null }), status: "done" as const, rows: outcome.rows, lastKey }
          yield* commitUnit(ctx, journal, mode.checkpoint, unit, outcome)
          if (!mode.checkpoint) unrecorded.push(...outcome.parts)
          parts.push(...outcome.parts)
        })

      let committed: Fiber.Fiber<void, RivetError> = yield* Effect.fork(Effect.void)
      // Fails as soon as a commit of the chain fails, else never.
      const commitFailed = (chain: Fiber.Fiber<void, RivetError>) => Effect.zipRight(Fiber.join(chain), Effect.never)
      for (;;) {
        const current = page
        const query = pageQuery(after)
        statements.push(statementOf(ctx, query))
        const { fiber, whenRead } = yield* startPage(current, query)
        const read = yield* Effect.raceFirst(whenRead, commitFailed(committed)).pipe(
          Effect.filterOrFail(
            (read) => read.sourceRows === 0 || read.last.every((value) => value !== undefined),
            () =>
              new SourceError({
                source: ctx.source.label,
                message: `export '${spec.name}': page ${current} ended on a row with a NULL key`,
                hint: "page by NOT NULL columns",
                retryable: false
              })
          ),
          // A page that fails still lets the pages before it commit, so --resume does not read them again.
          Effect.tapError(() => Effect.ignore(Fiber.join(committed))),
          Effect.onError(() => Fiber.interrupt(fiber))
        )
        sourceRows += read.sourceRows
        if (read.sourceRows === 0) {
          yield* Fiber.join(fiber)
          break
        }
        const before = committed
        committed = yield* Effect.fork(Effect.zipRight(Fiber.join(before), commit(current, after, fiber, read)))
        if (read.sourceRows < mode.pageSize) break
        page++
        after = read.last as ReadonlyArray<string>
      }
      yield* Fiber.join(committed)
      return { parts, unrecorded, schema, sourceRows, partStem: pageRunStem(spec.name, journal.startedAt), statements }
    })

  const estimate = () => estimateOf(ctx, base)
  return {
    checkpointed: mode.checkpoint,
    fingerprint,
    plan,
    estimate,
    execute,
    partStemOf: (startedAt) => pageRunStem(ctx.spec.name, startedAt)
  } satisfies PreparedMode
})
