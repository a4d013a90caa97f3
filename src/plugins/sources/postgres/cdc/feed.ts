import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import type postgres from "postgres"
import { type Batch, batchFromColumns, type BatchSchema } from "../../../../core/batch.js"
import type { SourceError } from "../../../../core/errors.js"
import type { ChangeFeed, ChangeRequest, FeedEnd, SourceQuery } from "../../../../core/plugin.js"
import type { ConnectionTarget } from "../../../../core/source/postgres-url.js"
import { fieldReader } from "../binary-fields.js"
import { passthrough, decodedText } from "../binary-variable.js"
import { loadCatalog } from "../catalog.js"
import { DecodeFailure } from "../decode.js"
import { connectionClosed, type ErrorContext, fromPostgres, sourceError } from "../errors.js"
import { openResult, planStatement } from "../result.js"
import { openSession, type SessionSettings } from "../session.js"
import { renderStatement } from "../statement.js"
import { type ColumnPlan, planColumn, resolveShape } from "../types.js"
import { ChangeReader, MidTransactionSchemaChange, type TablePlanner } from "./change-reader.js"
import { changeSchema, snapshotChangeColumns } from "./change-columns.js"
import { type ChangeTarget, PgoutputError, type Relation } from "./pgoutput.js"
import { parseLsn, positionText } from "./positions.js"
import { createSlot, openReplicationConnection, startReplication } from "./replication.js"
import {
  createPublication,
  currentPosition,
  dropSlot,
  publicationCovers,
  type QualifiedTable,
  readSlot,
  replicaIdentity,
  tableText
} from "./slot.js"
import { BATCH_BYTES } from "../binary-copy.js"

/** What the feed needs of the driver: its pool, where to connect, its session settings and error context. */
export interface FeedSetup {
  readonly pool: postgres.Sql
  readonly target: ConnectionTarget
  readonly applicationName: string
  readonly settings: SessionSettings
  readonly context: ErrorContext
}

export const qualified = (setup: FeedSetup, request: ChangeRequest): QualifiedTable => ({
  schema: request.table.schema ?? setup.settings.schema,
  name: request.table.name
})

export const tableQuery = (request: ChangeRequest, table: QualifiedTable): SourceQuery => ({
  exportName: request.exportName,
  base: { _tag: "Table", schema: table.schema, name: table.name },
  batchSize: request.batchSize,
  columnTypes: request.columnTypes
})

/** A promise of the driver, its failure worded as the source's error for `doing`. */
export const attempt = <A>(setup: FeedSetup, doing: string, run: () => Promise<A>): Effect.Effect<A, SourceError> =>
  Effect.tryPromise({ try: run, catch: (cause) => fromPostgres(cause, setup.context, doing) })

/** The table's columns as the batch reader plans them, from the catalog now. */
export const planTable = (setup: FeedSetup, query: SourceQuery) =>
  Effect.scoped(
    Effect.flatMap(openSession(setup.pool, setup.settings, setup.context), (connection) =>
      planStatement(connection, query, renderStatement(query), setup.context)
    )
  )

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

/** Waits out a walsender that still holds the slot (a run that ended a moment ago): SQLSTATE 55006, a few seconds. */
export const whileSlotBusy = async <A>(run: () => Promise<A>): Promise<A> => {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run()
    } catch (cause) {
      if ((cause as { code?: string }).code !== "55006" || attempt >= 100) throw cause
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

/** Where a feed starts, and what the server must create first. */
interface Start {
  readonly slot: "exists" | "create"
  /** The published position; undefined when the slot's own starting point decides. */
  readonly from: number | undefined
}

const problem = (setup: FeedSetup, message: string, hint: string) => Effect.fail(sourceError(setup.context, message, { hint }))

/** Checks the server, the publication and the slot against the stored position; creates the publication if missing. */
const prepareServer = (setup: FeedSetup, request: ChangeRequest, table: QualifiedTable) =>
  Effect.gen(function* () {
    const [settings] = yield* attempt(setup, "reading server settings", () =>
      setup.pool.unsafe(`SELECT current_setting('wal_level') AS wal_level, current_setting('server_version_num')::int AS version`)
    )
    const walLevel = String(settings!["wal_level"])
    if (walLevel !== "logical") {
      return yield* problem(
        setup,
        `mode: cdc needs wal_level = logical, but the server has ${walLevel}`,
        "run ALTER SYSTEM SET wal_level = logical and restart PostgreSQL (docs/modes/cdc.md, Setup)"
      )
    }
    const covers = yield* attempt(setup, "reading the publication", () => publicationCovers(setup.pool, request.publication, table))
    if (covers === "lacks") {
      return yield* problem(
        setup,
        `publication ${request.publication} does not include table ${table.schema}.${table.name}`,
        `add it (ALTER PUBLICATION ${request.publication} ADD TABLE ${table.schema}.${table.name}) or name another publication in cdc.publication`
      )
    }
    if (covers === "missing") {
      // A table published without a replica identity has its UPDATE and DELETE statements refused by PostgreSQL:
      // creating the publication would break the application's writes, not just this export.
      const identity = yield* attempt(setup, "reading the table's replica identity", () => replicaIdentity(setup.pool, table))
      if (identity === "n") {
        return yield* problem(
          setup,
          `table ${table.schema}.${table.name} has no replica identity (no primary key): publishing it for mode: cdc would make ` +
            "PostgreSQL refuse its UPDATE and DELETE statements, so the publication was not created",
          `give it a primary key, or run ALTER TABLE ${tableText(table)} REPLICA IDENTITY FULL, then run again ` +
            `(or create publication ${request.publication} yourself, e.g. WITH (publish = 'insert') for an insert-only table)`
        )
      }
      yield* attempt(setup, "creating the publication", () => createPublication(setup.pool, request.publication, table))
    }
    const slot = yield* attempt(setup, "reading the replication slot", () => readSlot(setup.pool, request.slot))
    const from = request.from === undefined ? undefined : parseLsn(request.from)
    let start: Start
    if (request.from !== undefined) {
      if (from === undefined) return yield* problem(setup, `the stored position '${request.from}' is not a PostgreSQL LSN`, `\`rivet state reset -e ${request.exportName}\` starts the export again`)
      if (slot === undefined) {
        return yield* problem(
          setup,
          `replication slot ${request.slot} no longer exists: the changes after position ${request.from} cannot be read`,
          `\`rivet state reset -e ${request.exportName}\` starts the export again from a new snapshot (a slot dropped by hand, or invalidated by max_slot_wal_keep_size)`
        )
      }
      if (slot.confirmed !== null && parseLsn(slot.confirmed)! > from) {
        return yield* problem(
          setup,
          `replication slot ${request.slot} was advanced to ${slot.confirmed}, past the published position ${request.from}: the changes in between are gone`,
          `\`rivet state reset -e ${request.exportName}\` starts the export again from a new snapshot; let only this export use the slot`
        )
      }
      start = { slot: "exists", from }
    } else if (slot !== undefined && !request.snapshot) {
      start = { slot: "exists", from: slot.confirmed === null ? undefined : parseLsn(slot.confirmed) }
    } else {
      // No published position: a slot left by a first run that never published holds no snapshot any more.
      if (slot !== undefined) yield* attempt(setup, "dropping the unpublished slot", () => dropSlot(setup.pool, request.slot))
      start = { slot: "create", from: undefined }
    }
    return { start, serverVersion: Number(settings!["version"]) }
  })

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

/** Opens the export's feed (see `SourceChanges.open`). */
export const openFeed = (setup: FeedSetup, request: ChangeRequest): Effect.Effect<ChangeFeed, SourceError, Scope.Scope> =>
  Effect.gen(function* () {
    const table = qualified(setup, request)
    const { start, serverVersion } = yield* prepareServer(setup, request, table)
    const query = tableQuery(request, table)
    const planned = yield* planTable(setup, query)
    const binary = canReadBinary(planned.plans, serverVersion)
    const changes = changeSchema(planned.schema.columns)
    if ("problem" in changes) return yield* problem(setup, changes.problem.reason, changes.problem.fix)
    const catalogSchema = changes.schema
    const repl = yield* Effect.acquireRelease(
      Effect.sync(() => openReplicationConnection(setup.target, setup.applicationName)),
      (sql) => Effect.promise(() => sql.end({ timeout: 0 }).catch(() => undefined))
    )
    let from = start.from
    let snapshot: { readonly name: string; readonly position: number } | undefined
    if (start.slot === "create") {
      const created = yield* attempt(setup, `creating replication slot ${request.slot}`, () => createSlot(repl, request.slot, request.snapshot))
      from = parseLsn(created.consistentPoint)!
      if (created.snapshotName !== undefined) snapshot = { name: created.snapshotName, position: from }
    }
    const target = request.untilCurrent ? parseLsn(yield* attempt(setup, "reading the WAL position", () => currentPosition(setup.pool))) : undefined
    // The exported snapshot is imported (first statement of the snapshot's transaction) before the replication
    // connection runs its next command, which ends the export.
    const snapshotResult = snapshot === undefined
      ? undefined
      : yield* openResult(setup.pool, query, { ...setup.settings, snapshot: snapshot.name }, setup.context)
    const replication = yield* attempt(setup, "starting replication", () =>
      whileSlotBusy(() => startReplication(repl, request.slot, from ?? 0, request.publication, binary))
    )
    const reader = new ChangeReader(
      replication,
      from ?? 0,
      relationPlanner(setup, request, table, binary),
      {
        target,
        maxEvents: request.maxEvents,
        deadline: request.untilCurrent || request.windowMs === undefined ? undefined : Date.now() + request.windowMs,
        signal: request.stop
      },
      { batchRows: request.batchSize, batchBytes: BATCH_BYTES },
      snapshotResult === undefined ? undefined : catalogSchema
    )
    yield* Effect.addFinalizer(() => Effect.sync(() => reader.close()))
    const failure = (cause: unknown) => streamFailure(setup, request, cause)
    const schema = yield* Effect.tryPromise({ try: () => reader.firstSchema(async () => catalogSchema), catch: failure })
    const changed = Stream.repeatEffectOption(
      Effect.tryPromise({ try: () => reader.next(), catch: failure }).pipe(
        Effect.mapError(Option.some),
        Effect.flatMap((batch) => (batch === undefined ? Effect.fail(Option.none()) : Effect.succeed(batch)))
      )
    )
    const batches = snapshotResult === undefined ? changed : Stream.concat(snapshotBatches(snapshotResult.batches, schema, from!), changed)
    const reached = Effect.suspend(() => {
      const ended = reader.reached
      return ended === undefined
        ? Effect.fail(sourceError(setup.context, "the change feed's position was asked for before its last change was read"))
        : Effect.succeed({ position: positionText(ended.position), end: ended.end satisfies FeedEnd })
    })
    return { schema, from: positionText(from ?? 0), batches, reached }
  })

