import * as Effect from "effect/Effect"
import * as ExecutionStrategy from "effect/ExecutionStrategy"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type { Batch } from "../../../../core/batch.js"
import { changeColumns, changeSchema } from "../../../../core/columns/change-columns.js"
import { SourceError } from "../../../../core/errors.js"
import type { ChangeFeed, ChangeRequest, FeedEnd, SourceQuery } from "../../../../core/plugin.js"
import { type ErrorContext, sourceError } from "../errors.js"
import { planQuery, schemaOf } from "../result.js"
import { type MysqlTarget, openSession, type Session, type SessionSettings } from "../session.js"
import { type BinlogPosition, comparePositions, parsePosition, positionText } from "./position.js"
import { BinlogReader, type Planned } from "./reader.js"
import { checkNotPurged, currentPosition, LOG_BIN_HINT, readServer } from "./server.js"
import { snapshotRows, startSnapshot } from "./snapshot.js"

/** The change columns as MySQL fills them: `__pos` a binary log position, `__txid` the GTID's sequence number. */
export const MYSQL_CHANGE_COLUMNS = changeColumns({ position: "binlog position", txid: "gtid sequence" })

/** What reading the binary log needs of the driver. */
export interface FeedSetup {
  /** The source's address and TLS settings: the binary log connection uses them as every other. */
  readonly address: MysqlTarget
  readonly settings: SessionSettings
  readonly zeroDatesAsNull: boolean
  readonly context: ErrorContext
}

/** A batch is cut at `batchSize` rows or at about this many bytes, whichever comes first (as a batch read's). */
const BATCH_BYTES = 8 * 1024 * 1024

export const tableOfRequest = (setup: FeedSetup, request: ChangeRequest) => ({
  schema: request.table.schema ?? setup.address.database,
  name: request.table.name
})

export const contextOf = (setup: FeedSetup, request: ChangeRequest): ErrorContext => ({
  ...setup.context,
  exportName: request.exportName,
  table: request.table
})

export const tableQuery = (setup: FeedSetup, request: ChangeRequest): SourceQuery => {
  const table = tableOfRequest(setup, request)
  return {
    exportName: request.exportName,
    base: { _tag: "Table", schema: table.schema, name: table.name },
    batchSize: request.batchSize,
    columnTypes: request.columnTypes
  }
}

export const openControl = (setup: FeedSetup, context: ErrorContext, snapshot = false): Effect.Effect<Session, SourceError, Scope.Scope> =>
  openSession(setup.address, setup.settings, context, snapshot)

/** The change rows' schema: the change columns then the table's, as the batch read plans them; fails on a clash. */
export const planChanges = (session: Session, query: SourceQuery, context: ErrorContext) =>
  Effect.gen(function* () {
    const { plans } = yield* planQuery(session, query, context)
    const changes = changeSchema(MYSQL_CHANGE_COLUMNS, schemaOf(plans).columns)
    if ("problem" in changes) return yield* Effect.fail(sourceError(context, changes.problem.reason, { hint: changes.problem.fix }))
    return { plans, schema: changes.schema } satisfies Planned
  })

/** What a feed needs the config to say: the replica id, one reader of the log per export. */
const requestProblem = (request: ChangeRequest, context: ErrorContext): SourceError | undefined => {
  if (request.serverId === undefined) {
    return sourceError(context, "mode: cdc on MySQL / MariaDB reads the binary log as a replica, which needs cdc.server_id", {
      hint: "add cdc: { server_id: <1..4294967295> } to the export, a number no other replica of the server (nor another export) uses"
    })
  }
  if ((request.readers?.length ?? 1) > 1) {
    return sourceError(context, `exports ${request.readers!.map((reader) => reader.exportName).join(", ")} name one slot: MySQL exports each read the binary log on their own`, {
      hint: "give each mysql cdc export its own cdc.slot (or leave it out) and its own cdc.server_id"
    })
  }
  return undefined
}

/** The server must write a row-based binary log with full row images. */
const checkServer = (session: Session, context: ErrorContext) =>
  Effect.flatMap(readServer(session, context), (server) => {
    const wrong = !server.logBin ? "log_bin is OFF" : server.format !== "ROW" ? `binlog_format is ${server.format}` : server.rowImage !== "FULL" ? `binlog_row_image is ${server.rowImage}` : undefined
    return wrong === undefined
      ? Effect.succeed(server)
      : Effect.fail(sourceError(context, `the server's binary log cannot feed change data capture: ${wrong} (ROW with FULL row images needed)`, { hint: LOG_BIN_HINT }))
  })

/** The plans of the columns the log names, in its order, from the catalog's; a column gone since is an error. */
const plannedFor = (catalog: Planned, names: ReadonlyArray<string>, context: ErrorContext, exportName: string) => {
  const byName = new Map(catalog.plans.map((plan) => [plan.name, plan]))
  const missing = names.filter((name) => !byName.has(name))
  if (missing.length > 0) {
    return Effect.fail(
      sourceError(context, `the table's columns ${missing.join(", ")} in the binary log at the published position no longer exist: the values of a dropped column cannot be planned`, {
        hint: `rivet state reset -e ${exportName} starts the export again from a new snapshot`
      })
    )
  }
  const plans = names.map((name) => byName.get(name)!)
  return Effect.succeed({ plans, schema: { columns: [...MYSQL_CHANGE_COLUMNS, ...schemaOf(plans).columns] } })
}

/** A reader's batches; `ended` gets where it ended once the last was taken. */
const changesOf = (reader: BinlogReader, context: ErrorContext, ended: (reached: { position: BinlogPosition; end: FeedEnd }) => void) => {
  const next = Effect.tryPromise({
    try: () => reader.next(),
    catch: (cause) => (cause instanceof SourceError ? cause : sourceError(context, String(cause)))
  })
  return Stream.repeatEffectOption(
    next.pipe(
      Effect.mapError(Option.some),
      Effect.flatMap((batch) => {
        if (batch !== undefined) return Effect.succeed(batch)
        const reached = reader.reached()
        if (reached !== undefined) ended(reached)
        return Effect.fail(Option.none())
      })
    )
  )
}

/**
 * Opens an export's change feed (see `SourceChanges.open`): on a first run the table's rows on a snapshot consistent
 * with a binary log position, then the changes from that position (or from the published one) until the stop rules
 * end the feed at a transaction boundary.
 */
export const openFeed = (setup: FeedSetup, request: ChangeRequest): Effect.Effect<ChangeFeed, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const context = contextOf(setup, request)
    const problem = requestProblem(request, context)
    if (problem !== undefined) return yield* Effect.fail(problem)
    const query = tableQuery(setup, request)
    const control = yield* openControl(setup, context)
    yield* checkServer(control, context)
    const catalog = yield* planChanges(control, query, context)
    let start: BinlogPosition
    let snapshot: Stream.Stream<Batch, SourceError> = Stream.empty
    if (request.from !== undefined) {
      const from = parsePosition(request.from)
      if (from === undefined) {
        return yield* Effect.fail(
          sourceError(context, `the stored position '${request.from}' is not a binary log position (file:offset)`, {
            hint: `the export's state belongs to another source: rivet state reset -e ${request.exportName} starts it anew`
          })
        )
      }
      yield* checkNotPurged(control, context, request.exportName, from)
      start = from
    } else if (request.snapshot) {
      // The snapshot's transaction ends with its rows, not with the feed: it would hold the server's purge meanwhile.
      const snapshotScope = yield* Scope.fork(yield* Effect.scope, ExecutionStrategy.sequential)
      const reading = yield* Scope.extend(openControl(setup, context), snapshotScope)
      start = yield* startSnapshot(reading, context)
      const pieces = request.snapshotPieces?.filters ?? [[]]
      snapshot = snapshotRows(reading, query, pieces, catalog.schema, start, setup.zeroDatesAsNull, context).pipe(
        Stream.ensuring(Scope.close(snapshotScope, Exit.void))
      )
    } else {
      start = yield* currentPosition(control, context)
    }
    // The log's end once the start is known: a first run's snapshot position is never past it.
    const target = request.untilCurrent ? yield* currentPosition(control, context) : undefined
    const readerOf = (planned: Planned | undefined) =>
      new BinlogReader({
        address: setup.address,
        serverId: request.serverId!,
        table: tableOfRequest(setup, request),
        planned,
        from: start,
        rules: {
          target,
          maxEvents: request.maxEvents,
          deadline: request.untilCurrent || request.windowMs === undefined ? undefined : Date.now() + request.windowMs,
          signal: request.stop
        },
        batchRows: Math.max(1, request.batchSize),
        batchBytes: BATCH_BYTES,
        zeroDatesAsNull: setup.zeroDatesAsNull,
        context
      })
    const acquire = (make: () => BinlogReader) => Effect.acquireRelease(Effect.sync(make), (reader) => Effect.sync(() => reader.close()))
    let reached: { position: BinlogPosition; end: FeedEnd } | undefined
    let planned: Planned = catalog
    let changes: Stream.Stream<Batch, SourceError> = Stream.empty
    if (target !== undefined && comparePositions(start, target) >= 0) {
      reached = { position: start, end: { _tag: "Current" } }
    } else if (request.from !== undefined) {
      // The table's columns at the published position may not be today's (a column added since): the log's first
      // table map of the table names them, and the feed's schema follows it.
      const reader = yield* acquire(() => readerOf(undefined))
      const names = yield* Effect.promise(() => reader.shape)
      planned = names === undefined ? catalog : yield* plannedFor(catalog, names, context, request.exportName)
      reader.usePlan(planned)
      changes = changesOf(reader, context, (ended) => (reached = ended))
    } else {
      // After a snapshot (or from the log's end now): the catalog's columns are the log's from here on.
      changes = Stream.unwrapScoped(Effect.map(acquire(() => readerOf(catalog)), (reader) => changesOf(reader, context, (ended) => (reached = ended))))
    }
    return {
      schema: planned.schema,
      from: positionText(start),
      batches: Stream.concat(snapshot, changes),
      reached: Effect.suspend(() =>
        reached === undefined
          ? Effect.fail(sourceError(context, "the change feed's position was asked for before its last change was read"))
          : Effect.succeed({ position: positionText(reached.position), end: reached.end })
      )
    }
  })
