import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { numbersEveryPart } from "../../../config/partition.js"
import { DurationMs } from "../../../core/duration.js"
import { ConfigError } from "../../../core/errors.js"
import { changePartName, partNamePattern } from "../../../core/naming.js"
import type { ChangeFeed, ChangeRequest, FeedEnd, SourceChanges } from "../../../core/plugin.js"
import { runAttempt, retryUnit } from "../attempt.js"
import { integerChunkColumn, openChunkFilters } from "../chunked.js"
import { baseQuery, type ExportContext, outputSchemaOf, planningPrimitives } from "../context.js"
import { defineMode } from "../define.js"
import { planFingerprint } from "../fingerprint.js"
import type { ModeOutcome, PreparedMode, RunJournal } from "../mode.js"
import { planHeader, plannedColumns } from "../planning.js"
import { chunkFields, DEFAULT_CHUNK_SIZE } from "./chunk-keys.js"

/** What PostgreSQL accepts as a slot name: lower-case letters, digits and `_`, at most 63 characters. */
const SlotName = Schema.String.pipe(
  Schema.pattern(/^[a-z0-9_]{1,63}$/, {
    message: (issue) =>
      `${JSON.stringify(issue.actual)} is not a replication slot name: PostgreSQL's are 1 to 63 lower-case letters, digits or underscores (e.g. rivet_orders)`
  })
)

const CdcBlock = Schema.Struct({
  slot: Schema.optional(SlotName.annotations({ description: "cdc: the replication slot (default rivet_<export>), created on the first run." })),
  publication: Schema.optional(
    Schema.NonEmptyString.annotations({
      description: "cdc: the publication (default: the slot's name), created FOR TABLE on the first run if missing (for every table of the exports sharing the slot)."
    })
  ),
  server_id: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 4_294_967_295)).annotations({
      description:
        "cdc, MySQL / MariaDB (required there): the server id the export reads the binary log under as a replica, 1 to 4294967295, unique among the server's replicas and other readers (the server ends a reader whose id another one takes)."
    })
  ),
  initial: Schema.optional(
    Schema.Literal("snapshot", "none").annotations({
      description: "cdc: snapshot (default) exports the table's rows on the slot's snapshot first; none starts with the changes from the first run on."
    })
  ),
  until_current: Schema.optional(
    Schema.Boolean.annotations({
      description:
        "cdc: true (default) reads up to the log position at the run's start, publishes and exits; false keeps reading, publishing a window every commit_interval (or max_events changes) until SIGTERM, as rivet run --follow does."
    })
  ),
  commit_interval: Schema.optional(
    DurationMs.annotations({ description: "cdc, reading continuously: a window is published at the first transaction boundary after this long (default 60s)." })
  ),
  rollover: Schema.optional(
    Schema.Int.pipe(Schema.positive()).annotations({ description: "cdc: changes per part at most (max_file_size applies too)." })
  ),
  max_events: Schema.optional(
    Schema.Int.pipe(Schema.positive()).annotations({
      description: "cdc: a run stops at the first transaction boundary after this many changes (a soft cap)."
    })
  )
})

const keys = Schema.Struct({
  cdc: Schema.optional(CdcBlock.annotations({ description: "mode: cdc: the change log (slot, publication, first run, run length)." })),
  ...chunkFields
})

interface CdcSettings {
  readonly kind: "cdc"
  readonly slot?: string | undefined
  readonly publication?: string | undefined
  readonly serverId?: number | undefined
  readonly initial: "snapshot" | "none"
  readonly untilCurrent: boolean
  readonly rollover?: number | undefined
  readonly maxEvents?: number | undefined
  readonly commitIntervalMs: number
  /** Set with chunk_size (or chunk_column): the first run's snapshot is read in key ranges, `parallel` at a time. */
  readonly snapshotChunks?: { readonly column?: string | undefined; readonly size: number; readonly parallel: number } | undefined
}

const DEFAULT_COMMIT_INTERVAL_MS = 60_000

/** `rivet_<export>` in the characters a slot name may have. */
export const defaultLogName = (exportName: string): string =>
  `rivet_${exportName.toLowerCase().replace(/[^a-z0-9_]/g, "_")}`.slice(0, 63)

/** The column the published position is stored under in the state. */
const POSITION = "__pos"

const slotOf = (exportName: string, settings: CdcSettings): string => settings.slot ?? defaultLogName(exportName)

const publicationOf = (exportName: string, settings: CdcSettings): string => settings.publication ?? slotOf(exportName, settings)

/** The change log request of an export, continuing after `from`. */
export const changeRequestOf = (
  ctx: Pick<ExportContext, "spec" | "follow" | "sharing">,
  settings: CdcSettings,
  from: string | undefined
): ChangeRequest => {
  const { spec, follow, sharing } = ctx
  return {
    exportName: spec.name,
    table: spec.table!,
    slot: slotOf(spec.name, settings),
    publication: publicationOf(spec.name, settings),
    serverId: settings.serverId,
    readers: sharing !== undefined && sharing.length > 1 ? sharing : undefined,
    from,
    snapshot: from === undefined && settings.initial === "snapshot",
    // Reading continuously, a run is one window: up to commit_interval, or until the stop request.
    untilCurrent: follow === undefined,
    windowMs: follow === undefined ? undefined : settings.commitIntervalMs,
    stop: follow?.stop,
    maxEvents: settings.maxEvents,
    batchSize: spec.batchSize,
    columnTypes: spec.columnTypes
  }
}

const changesOf = (ctx: ExportContext): Effect.Effect<SourceChanges, ConfigError> =>
  ctx.source.changes === undefined
    ? Effect.fail(
        new ConfigError({
          path: `export '${ctx.spec.name}'.mode`,
          message: `the ${ctx.source.label} source cannot read a change log (mode: cdc)`,
          hint: "use a source with change data capture (postgres, mysql), or another mode"
        })
      )
    : Effect.succeed(ctx.source.changes)

/** The published position in the state; a cursor of another mode (the export's mode changed) starts over. */
const storedPosition = (ctx: ExportContext) =>
  Effect.gen(function* () {
    const stored = Option.getOrUndefined(yield* ctx.state.cursor(ctx.spec.name))
    if (stored === undefined) return undefined
    if (stored.column === POSITION) return stored.value
    yield* ctx.reporter.notice(ctx.spec.name, `the stored cursor is on column '${stored.column}', not a change-log position: starting the change log anew`)
    return undefined
  })

/**
 * What the slot may be confirmed up to once this export recorded `reached`: the least position the exports reading
 * the slot have published (positions are zero-padded, so text order is log order); none while one has published none.
 */
const confirmable = (ctx: ExportContext, reached: string) =>
  Effect.gen(function* () {
    let least = reached
    for (const reader of ctx.sharing ?? []) {
      if (reader.exportName === ctx.spec.name) continue
      const stored = Option.getOrUndefined(yield* ctx.state.cursor(reader.exportName))
      if (stored?.column !== POSITION) return undefined
      if (stored.value < least) least = stored.value
    }
    return least
  })

/**
 * The first run's snapshot in key ranges of the chunk column (chunked mode's planning): the bounds are read now, before
 * the slot's snapshot exists, so the first and last ranges are open-ended (openChunkFilters).
 */
const snapshotPieces = (ctx: ExportContext, chunks: NonNullable<CdcSettings["snapshotChunks"]>) =>
  Effect.gen(function* () {
    const { describe, bounds } = yield* planningPrimitives(ctx)
    const base = baseQuery(ctx.spec)
    const column = yield* integerChunkColumn(ctx, yield* describe(base), chunks.column)
    const filters = yield* openChunkFilters(ctx, column.name, chunks.size, yield* bounds(base, column.name))
    return { filters, parallel: chunks.parallel }
  })

/** What the user learns when a run ended before the log's current position. */
const endNotice = (end: FeedEnd, position: string): string | undefined => {
  if (end._tag === "MaxEvents") return `stopped at max_events, at the transaction boundary ${position}: the next run continues from there`
  if (end._tag === "SchemaChanged") {
    return `${end.detail}: this run ends at ${position}, before the change; the next run writes the new columns (on_schema_drift applies)`
  }
  return undefined
}

/**
 * One run of the change log: the snapshot on the first run, then every change after the published position up to
 * the target, through the export's format and destination as one unit; its parts are named by the position the run
 * started after, so a run repeated after a crash overwrites what the crashed one left. The position reached is stored
 * with the run, and only once it is recorded is it confirmed to the source.
 */
const prepareCdc = Effect.fn("Modes.cdc")(function* (ctx: ExportContext, settings: CdcSettings) {
  const changes = yield* changesOf(ctx)
  const fingerprint = planFingerprint(ctx, {
    mode: "cdc",
    slot: settings.slot ?? null,
    publication: settings.publication ?? null,
    initial: settings.initial
  })
  const execute = (journal: RunJournal) =>
    Effect.gen(function* () {
      const from = yield* storedPosition(ctx)
      const plain = changeRequestOf(ctx, settings, from)
      const request = plain.snapshot && settings.snapshotChunks !== undefined ? { ...plain, snapshotPieces: yield* snapshotPieces(ctx, settings.snapshotChunks) } : plain
      let feed: ChangeFeed | undefined
      const open = Effect.map(changes.open(request), (opened) => {
        feed = opened
        return { schema: opened.schema, batches: opened.batches }
      })
      const outcome = yield* retryUnit(
        ctx,
        "the change log",
        runAttempt(ctx, {
          unit: { kind: "query", index: 0 },
          query: baseQuery(ctx.spec),
          open,
          rowsPerPart: settings.rollover,
          runId: journal.runId,
          runStartedAt: journal.startedAt,
          keyOf: (part) => changePartName(ctx.spec.name, request.snapshot, feed!.from, ctx.format.extension, part)
        })
      )
      const reached = yield* feed!.reached
      const notice = endNotice(reached.end, reached.position)
      if (notice !== undefined) yield* ctx.reporter.notice(ctx.spec.name, notice)
      const result: ModeOutcome = {
        parts: outcome.parts,
        unrecorded: outcome.parts,
        schema: outcome.schema,
        sourceRows: outcome.sourceRows,
        cursor: { column: POSITION, value: reached.position, type: "lsn" },
        statements: [],
        afterRecorded: Effect.flatMap(confirmable(ctx, reached.position), (position) =>
          position === undefined ? Effect.void : changes.confirm(request, position)
        )
      }
      return result
    })
  return {
    checkpointed: false,
    fingerprint,
    plan: Effect.gen(function* () {
      const from = yield* storedPosition(ctx)
      const request = changeRequestOf(ctx, settings, from)
      const status = yield* changes.inspect(request)
      // The change columns then the table's, as the source would open the feed now (describing the table alone
      // would leave the change columns out); none when the source cannot tell.
      const columns = status.schema === undefined ? undefined : yield* plannedColumns(ctx, yield* outputSchemaOf(ctx, status.schema))
      return {
        ...planHeader(ctx, fingerprint),
        statements: [],
        ...(columns ? { columns } : {}),
        estimated_rows: null,
        changes: {
          slot: status.positionOnServer === false ? null : request.slot,
          publication: status.positionOnServer === false ? null : request.publication,
          from: from ?? null,
          snapshot: request.snapshot,
          slot_confirmed: status.slot?.confirmed ?? null,
          current: status.current ?? null,
          pending_bytes: status.slot?.retainedBytes ?? null
        },
        naming: partNamePattern("changes", ctx.spec.name, ctx.format.extension, numbersEveryPart(ctx.spec))
      }
    }),
    estimate: () => Effect.succeed(null),
    execute
  } satisfies PreparedMode
})

export const cdcMode = defineMode({
  kind: "cdc",
  summary: "cdc (the table's changes from the database's change log, exactly once)",
  keys,
  tracksCursor: true,
  writesSeveralParts: true,
  followable: true,
  read: (decoded, { path, hasTable, hasQuery }) => {
    // An export with neither table nor query already has its own error.
    if (!hasTable && hasQuery) {
      return Either.left([
        new ConfigError({
          path: `${path}.query`,
          message: "mode: cdc reads the changes of one table, named with table: (a query's rows have no change log)",
          hint: "table: schema.name"
        })
      ])
    }
    const block = decoded.cdc ?? {}
    return Either.right({
      kind: "cdc" as const,
      slot: block.slot,
      publication: block.publication,
      serverId: block.server_id,
      initial: block.initial ?? "snapshot",
      untilCurrent: block.until_current ?? true,
      rollover: block.rollover,
      maxEvents: block.max_events,
      commitIntervalMs: block.commit_interval ?? DEFAULT_COMMIT_INTERVAL_MS,
      snapshotChunks:
        decoded.chunk_size === undefined && decoded.chunk_column === undefined
          ? undefined
          : { column: decoded.chunk_column, size: decoded.chunk_size ?? DEFAULT_CHUNK_SIZE, parallel: decoded.parallel ?? 1 }
    })
  },
  behaviour: (settings) => ({
    prepare: (ctx) => prepareCdc(ctx, settings),
    // Snapshot pieces read at once on their own connections (the source's pool is sized for them).
    parallel: settings.snapshotChunks?.parallel ?? 1,
    continuous: !settings.untilCurrent,
    // Exports naming one slot read it once, together: one stream, one stop rule, one publication.
    sharedRead: (exportName, table) => ({
      resource: `replication slot ${slotOf(exportName, settings)}`,
      agree: {
        "cdc.publication": publicationOf(exportName, settings),
        "cdc.server_id": settings.serverId,
        "cdc.initial": settings.initial,
        "cdc.until_current": settings.untilCurrent,
        "cdc.commit_interval": settings.commitIntervalMs,
        "cdc.max_events": settings.maxEvents
      },
      distinct: { table: table === undefined ? undefined : [table.schema, table.name].filter((part) => part !== undefined).join(".") }
    }),
    changeLog: (spec) => changeRequestOf({ spec }, settings, undefined)
  })
})
