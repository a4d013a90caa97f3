import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import * as Ref from "effect/Ref"
import * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type postgres from "postgres"
import { type Batch, batchFromColumns, type BatchSchema } from "../../../../core/batch.js"
import type { SourceError } from "../../../../core/errors.js"
import type { ChangeFeed, ChangeRequest, FeedEnd, RowFilter, SourceQuery } from "../../../../core/plugin.js"
import { BATCH_BYTES } from "../binary-copy.js"
import { fieldReader } from "../binary-fields.js"
import { passthrough, decodedText } from "../binary-variable.js"
import { loadCatalog } from "../catalog.js"
import { DecodeFailure } from "../decode.js"
import { connectionClosed, fromPostgres, sourceError } from "../errors.js"
import { openResult } from "../result.js"
import { type ColumnPlan, planColumn, resolveShape } from "../types.js"
import { ChangeReader, MidTransactionSchemaChange, type TablePlanner } from "./change-reader.js"
import { changeSchema, snapshotChangeColumns } from "./change-columns.js"
import { type ChangeTarget, PgoutputError, type Relation } from "./pgoutput.js"
import { parseLsn, positionText } from "./positions.js"
import { createSlot, openReplicationConnection, startReplication } from "./replication.js"
import { prepareServer, problem } from "./server.js"
import { attempt, type FeedSetup, planTable, qualified, tableQuery, whileSlotBusy } from "./setup.js"
import { currentPosition, type QualifiedTable } from "./slot.js"

/**
 * One replication stream of a slot for one export or several sharing it, decoded into a change feed per export
 * (what the server must hold first: server.ts; the stream's reader: change-reader.ts).
 */

/**
 * A field sink per column: PostgreSQL's binary send format, or its text output (servers before 14, types without a
 * binary reader here). A text value is taken as it is unless the plan decodes it or its column is fixed-width (uuid:
 * 16 bytes, parsed from the text).
 */
const sinksOf = (plans: ReadonlyArray<ColumnPlan>, binary: boolean): ChangeTarget["sinks"] =>
  plans.map((plan) =>
    binary ? fieldReader(plan).make : plan.decode === undefined && plan.type.kind !== "uuid" ? passthrough(0, "text") : decodedText(plan)
  )

/** Binary values need a binary reader for every column (and PostgreSQL 14+ for pgoutput's `binary` option). */
const canReadBinary = (plans: ReadonlyArray<ColumnPlan>, serverVersion: number): boolean =>
  serverVersion >= 140000 && plans.every((plan) => !fieldReader(plan).rendered)

const sameSchema = (a: BatchSchema, b: BatchSchema): boolean =>
  a.columns.length === b.columns.length &&
  a.columns.every((column, i) => column.name === b.columns[i]!.name && JSON.stringify(column.type) === JSON.stringify(b.columns[i]!.type))

/** Plans a Relation message's columns from its type OIDs (its typmods are the table's), with the export's overrides. */
const relationPlanner = (setup: FeedSetup, request: ChangeRequest, table: QualifiedTable, binary: boolean): TablePlanner => ({
  isExported: (relation) => relation.schema === table.schema && relation.name === table.name,
  sameSchema,
  plan: async (relation: Relation) => {
    const described = relation.columns.map((column) => ({ name: column.name, type: column.type, table: 0, number: 0 }))
    const catalog = await loadCatalog(setup.pool as unknown as postgres.TransactionSql, described)
    const plans: Array<ColumnPlan> = []
    for (const column of relation.columns) {
      const planned = planColumn(column.name, resolveShape(catalog.types, column.type, column.typmod), request.columnTypes.get(column.name))
      if (!("plan" in planned)) throw new DecodeFailure(`column "${column.name}": ${planned.problem.reason}`, planned.problem.fix)
      plans.push(planned.plan)
    }
    const changes = changeSchema(plans.map((plan) => ({ name: plan.name, type: plan.type, sourceType: plan.sourceType })))
    if ("problem" in changes) throw new DecodeFailure(changes.problem.reason, changes.problem.fix)
    return { schema: changes.schema, sinks: sinksOf(plans, binary) }
  }
})

/** A failure of the replication stream as the user reads it. */
const streamFailure = (setup: FeedSetup, request: ChangeRequest, cause: unknown): SourceError => {
  if (cause instanceof MidTransactionSchemaChange) {
    return sourceError(setup.context, cause.message, {
      hint: "change the table's columns and its rows in separate transactions; to go on, `rivet state reset -e " +
        `${request.exportName}\` starts the export again from a new snapshot`
    })
  }
  if (cause instanceof DecodeFailure) return sourceError(setup.context, cause.message, { hint: cause.hint })
  if (cause instanceof PgoutputError) {
    return sourceError(setup.context, `the replication stream could not be decoded: ${cause.message}`, {
      hint: "this is a bug in Rivet or a server speaking another pgoutput version: please report it with the server version"
    })
  }
  // Not the server's error nor the driver's: the stream ended under the reader.
  if (cause instanceof Error && !("code" in cause)) return connectionClosed(setup.context, "reading changes", cause.message)
  return fromPostgres(cause, setup.context, "reading changes")
}


/** The snapshot's batches with the change columns in front: `snapshot`, the slot's starting point, the row's ordinal. */
const snapshotBatches = (batches: Stream.Stream<Batch, SourceError>, schema: BatchSchema, position: number) =>
  Stream.suspend(() => {
    let seq = 0
    return Stream.map(batches, (batch) => {
      const meta = snapshotChangeColumns(batch.rowCount, position, seq)
      seq += batch.rowCount
      return batchFromColumns(schema, [...meta, ...batch.columns])
    })
  })

/**
 * A member's snapshot rows on the log's exported snapshot, in the request's pieces (`parallel` at a time, each its own
 * statement and connection) or in one statement. Its turn comes once the member before it has imported the snapshot
 * (`previous`); `imported` completes once its last piece has, as replication may start only after that.
 */
const snapshotStream = (
  setup: FeedSetup,
  request: ChangeRequest,
  query: SourceQuery,
  snapshot: string,
  previous: Deferred.Deferred<void, SourceError> | undefined,
  imported: Deferred.Deferred<void, SourceError>
): Stream.Stream<Batch, SourceError> => {
  const pieces = request.snapshotPieces ?? { filters: [[]], parallel: 1 }
  return Stream.unwrap(
    Effect.gen(function* () {
      if (previous !== undefined) yield* Deferred.await(previous)
      const left = yield* Ref.make(pieces.filters.length)
      const piece = (filters: ReadonlyArray<RowFilter>) =>
        Stream.unwrapScoped(
          Effect.gen(function* () {
            const result = yield* openResult(setup.pool, { ...query, where: [...(query.where ?? []), ...filters] }, { ...setup.settings, snapshot }, setup.context).pipe(
              Effect.tapError((error) => Deferred.fail(imported, error))
            )
            if ((yield* Ref.updateAndGet(left, (n) => n - 1)) === 0) yield* Deferred.succeed(imported, undefined)
            return result.batches
          })
        )
      return Stream.flatMap(Stream.fromIterable(pieces.filters), piece, { concurrency: pieces.parallel })
    })
  )
}

/** Batches read ahead for the schemas of members without a snapshot, before their feeds are handed out. */
const READ_AHEAD_BYTES = 32 * 1024 * 1024

/** One replication stream and a feed per member; `abandon(i)` lets the others go on without member `i`'s consumer. */
export interface OpenStream {
  readonly feeds: ReadonlyArray<ChangeFeed>
  readonly abandon: (member: number) => void
}

/**
 * Opens one replication stream of a slot for one export, or for several sharing the slot (see `SourceChanges.open`;
 * `requests` agree on slot, publication, stop rule and first run): a feed per request, each with its table's
 * changes. On a first run every member's snapshot is imported, one after the other as their consumers start reading
 * (each holds a pool connection), before replication starts and ends the slot's exported snapshot.
 */
export const openStream = (setup: FeedSetup, requests: ReadonlyArray<ChangeRequest>): Effect.Effect<OpenStream, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const lead = requests[0]!
    const tables = requests.map((request) => qualified(setup, request))
    const { start, serverVersion } = yield* prepareServer(setup, requests, tables)
    const queries = requests.map((request, i) => tableQuery(request, tables[i]!))
    const planned = yield* Effect.forEach(queries, (query) => planTable(setup, query))
    const binary = planned.every((plan) => canReadBinary(plan.plans, serverVersion))
    const catalogSchemas: Array<BatchSchema> = []
    for (const plan of planned) {
      const changes = changeSchema(plan.schema.columns)
      if ("problem" in changes) return yield* problem(setup, changes.problem.reason, changes.problem.fix)
      catalogSchemas.push(changes.schema)
    }
    const repl = yield* Effect.acquireRelease(
      Effect.sync(() => openReplicationConnection(setup.target, setup.applicationName)),
      (sql) => Effect.promise(() => sql.end({ timeout: 0 }).catch(() => undefined))
    )
    let from = start.from
    let snapshot: string | undefined
    if (start.slot === "create") {
      const exported = requests.some((request) => request.snapshot)
      const created = yield* attempt(setup, `creating replication slot ${lead.slot}`, () => createSlot(repl, lead.slot, exported))
      from = parseLsn(created.consistentPoint)!
      snapshot = created.snapshotName
    }
    const origin = from ?? 0
    const froms = start.froms.map((member) => member ?? origin)
    const target = lead.untilCurrent ? parseLsn(yield* attempt(setup, "reading the WAL position", () => currentPosition(setup.pool))) : undefined
    const snapshotOf = (i: number) => (snapshot !== undefined && requests[i]!.snapshot ? snapshot : undefined)
    // Member i imports the exported snapshot once member i - 1 has (imports[i] done); replication starts after the
    // last, as the replication connection's next command ends the export.
    const imports = yield* Effect.forEach(requests, () => Deferred.make<void, SourceError>())
    const pendingImports = requests.flatMap((_, i) => (snapshotOf(i) === undefined ? [] : [imports[i]!]))
    const startReader = Effect.gen(function* () {
      yield* Effect.forEach(pendingImports, Deferred.await, { discard: true })
      const replication = yield* attempt(setup, "starting replication", () =>
        whileSlotBusy(() => startReplication(repl, lead.slot, origin, lead.publication, binary))
      )
      const reader = new ChangeReader(
        replication,
        origin,
        requests.map((request, i) => ({
          planner: relationPlanner(setup, request, tables[i]!, binary),
          from: froms[i]!,
          schema: snapshotOf(i) === undefined ? undefined : catalogSchemas[i]
        })),
        {
          target,
          maxEvents: lead.maxEvents,
          deadline: lead.untilCurrent || lead.windowMs === undefined ? undefined : Date.now() + lead.windowMs,
          signal: lead.stop
        },
        { batchRows: lead.batchSize, batchBytes: BATCH_BYTES }
      )
      yield* Effect.addFinalizer(() => Effect.sync(() => reader.close()))
      return reader
    })
    const failure = (i: number) => (cause: unknown) => streamFailure(setup, requests[i]!, cause)
    // The reader once started, and the members whose consumers gave up: plain values of this stream's own scope.
    let running: ChangeReader | undefined
    const abandoned = new Set<number>()
    const started = yield* Deferred.make<ChangeReader, SourceError>()
    const startRunning = Effect.tap(startReader, (reader) =>
      Effect.sync(() => {
        running = reader
        for (const i of abandoned) reader.detach(i)
      })
    )
    let schemas: ReadonlyArray<BatchSchema>
    if (pendingImports.length === 0) {
      const reader = yield* startRunning
      schemas = yield* Effect.tryPromise({ try: () => reader.schemas(async (i) => catalogSchemas[i]!, READ_AHEAD_BYTES), catch: failure(0) })
      yield* Deferred.succeed(started, reader)
    } else {
      // A first run: the snapshots give the schemas; the reader starts once every member has imported its snapshot.
      schemas = catalogSchemas
      const streamScope = yield* Effect.scope
      yield* Effect.forkScoped(Deferred.complete(started, Scope.extend(startRunning, streamScope)))
    }
    const feeds = requests.map((_, i): ChangeFeed => {
      const next = Effect.flatMap(Deferred.await(started), (reader) => Effect.tryPromise({ try: () => reader.next(i), catch: failure(i) }))
      const changed = Stream.repeatEffectOption(
        next.pipe(
          Effect.mapError(Option.some),
          Effect.flatMap((batch) => (batch === undefined ? Effect.fail(Option.none()) : Effect.succeed(batch)))
        )
      )
      const name = snapshotOf(i)
      const snapshotRows =
        name === undefined ? Stream.empty : snapshotStream(setup, requests[i]!, queries[i]!, name, i === 0 ? undefined : imports[i - 1]!, imports[i]!)
      const withChangeColumns = snapshotBatches(snapshotRows, schemas[i]!, origin)
      const reached = Effect.suspend(() => {
        const ended = running?.reached(i)
        return ended === undefined
          ? Effect.fail(sourceError(setup.context, "the change feed's position was asked for before its last change was read"))
          : Effect.succeed({ position: positionText(ended.position), end: ended.end satisfies FeedEnd })
      })
      return { schema: schemas[i]!, from: positionText(froms[i]!), batches: Stream.concat(withChangeColumns, changed), reached }
    })
    const abandon = (i: number) => {
      abandoned.add(i)
      // Its snapshot's turn passes to the next member, and its batches are no longer kept.
      Deferred.unsafeDone(imports[i]!, Exit.void)
      running?.detach(i)
    }
    return { feeds, abandon }
  })

/** Opens the feed of an export reading its slot alone (see `SourceChanges.open`). */
export const openFeed = (setup: FeedSetup, request: ChangeRequest): Effect.Effect<ChangeFeed, SourceError, Scope.Scope> =>
  Effect.map(openStream(setup, [request]), (stream) => stream.feeds[0]!)
