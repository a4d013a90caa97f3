import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { StateError } from "../core/errors.js"
import type { PartRecord } from "../core/manifest.js"
import {
  LEASE_COLUMNS,
  NEWEST_RUN_FIRST,
  PART_COLUMNS,
  RUN_COLUMNS,
  RUN_PLACEHOLDERS,
  runValues,
  toCursor,
  toLease,
  toPart,
  toRun,
  toUnit,
  UNFINISHED
} from "./rows.js"
import { makeSqlLeases, requireLease } from "./sql-leases.js"
import { int, text, type SqlBackend, type SqlExecutor, type SqlValue } from "./sql.js"
import type {
  CursorState,
  ExportSummary,
  LeaseHolder,
  LeaseProof,
  FinishedRun,
  RunRecord,
  SchemaBaseline,
  StateStoreShape,
  UnitRecord
} from "./store.js"

/** The store's semantics over any `SqlBackend`; both backends share this one implementation. */

const nullable = (value: string | undefined): SqlValue => value ?? null

const nowIso = Effect.map(Clock.currentTimeMillis, (millis) => new Date(millis).toISOString())

const sameCursor = (a: CursorState | undefined, b: CursorState | undefined): boolean =>
  a === undefined || b === undefined
    ? a === b
    : a.column === b.column && a.value === b.value && a.type === b.type

const showCursor = (cursor: CursorState | undefined): string =>
  cursor === undefined ? "none (no cursor stored)" : `${cursor.column} = ${cursor.value}`

/** Records a unit's (or run's) parts; a path recorded again replaces its record. */
export const insertParts = (
  tx: SqlExecutor,
  target: { runId: string; exportName: string; unit: number | undefined; firstOrdinal: number; committedAt: string },
  parts: ReadonlyArray<PartRecord>
) =>
  Effect.forEach(
    parts,
    (part, i) =>
      tx.run(
        `INSERT INTO rivet_parts (${PART_COLUMNS}, ordinal) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         ON CONFLICT (run_id, path) DO UPDATE SET unit = excluded.unit, row_count = excluded.row_count,
           size_bytes = excluded.size_bytes, fingerprint = excluded.fingerprint, partition_values = excluded.partition_values,
           committed_at = excluded.committed_at, ordinal = excluded.ordinal`,
        [
          target.runId,
          target.exportName,
          target.unit ?? null,
          part.path,
          part.rows,
          part.size_bytes,
          part.content_fingerprint,
          target.committedAt,
          part.partition === undefined ? null : JSON.stringify(part.partition),
          target.firstOrdinal + i
        ]
      ),
    { discard: true }
  )

export const makeSqlStore = (db: SqlBackend): StateStoreShape => {
  const noSuchRun = (runId: string) =>
    new StateError({
      message: `no run '${runId}' in the state at ${db.location}`,
      hint: "the run must be journaled with beginRun first; `rivet state show` lists the recorded runs"
    })

  /** The run's export, failing when the run is unknown. */
  const exportOfRun = (tx: SqlExecutor, runId: string) =>
    Effect.flatMap(tx.all("SELECT export_name FROM rivet_runs WHERE run_id = ?", [runId]), (rows) =>
      rows[0] === undefined ? Effect.fail(noSuchRun(runId)) : Effect.succeed(text(rows[0]["export_name"]))
    )

  const upsertCursor = (tx: SqlExecutor, exportName: string, cursor: CursorState, updatedAt: string) =>
    tx.run(
      `INSERT INTO rivet_cursors (export_name, column_name, value, value_type, updated_at) VALUES (?, ?, ?, ?, ?)
       ON CONFLICT (export_name) DO UPDATE SET column_name = excluded.column_name, value = excluded.value,
         value_type = excluded.value_type, updated_at = excluded.updated_at`,
      [exportName, cursor.column, cursor.value, cursor.type, updatedAt]
    )

  const cursor = Effect.fn("StateStore.cursor")(function* (exportName: string) {
    const rows = yield* db.all("SELECT column_name, value, value_type FROM rivet_cursors WHERE export_name = ?", [
      exportName
    ])
    return Option.map(Option.fromNullable(rows[0]), toCursor)
  })

  const beginRun = Effect.fn("StateStore.beginRun")(function* (run: RunRecord) {
    const inserted = yield* db.run(
      `INSERT INTO rivet_runs (${RUN_COLUMNS}) VALUES (${RUN_PLACEHOLDERS}) ON CONFLICT (run_id) DO NOTHING`,
      runValues(run)
    )
    if (inserted === 0) {
      return yield* new StateError({
        message: `a run with id '${run.runId}' is already recorded in the state at ${db.location}`,
        hint: "run ids must be unique; to continue an interrupted run use `rivet run --resume`"
      })
    }
  })

  const reopenRun = Effect.fn("StateStore.reopenRun")(function* (runId: string) {
    const changed = yield* db.run(
      "UPDATE rivet_runs SET status = 'running', finished_at = NULL, error = NULL WHERE run_id = ?",
      [runId]
    )
    if (changed === 0) return yield* noSuchRun(runId)
  })

  const finishRun = Effect.fn("StateStore.finishRun")(function* (
    runId: string,
    outcome: FinishedRun,
    extra?: {
      readonly parts?: ReadonlyArray<PartRecord> | undefined
      readonly cursor?: CursorState | undefined
      readonly cursorFrom?: CursorState | null | undefined
      readonly lease?: LeaseProof | undefined
    }
  ) {
    const now = yield* nowIso
    yield* db.transaction((tx) =>
      Effect.gen(function* () {
        const exportName = yield* exportOfRun(tx, runId)
        if (extra?.lease !== undefined) yield* requireLease(tx, extra.lease, runId)
        if (extra?.cursor !== undefined && extra.cursorFrom !== undefined) {
          const rows = yield* tx.all("SELECT column_name, value, value_type FROM rivet_cursors WHERE export_name = ?", [
            exportName
          ])
          const stored = rows[0] === undefined ? undefined : toCursor(rows[0])
          if (!sameCursor(stored, extra.cursorFrom ?? undefined) && !sameCursor(stored, extra.cursor)) {
            return yield* new StateError({
              message: `export '${exportName}': the stored cursor moved while run '${runId}' ran: it started from ${showCursor(extra.cursorFrom ?? undefined)}, the state now holds ${showCursor(stored)} (written by another run); the cursor was left there rather than set to ${showCursor(extra.cursor)}`,
              hint: "two runs of one export overlapped (a lease that expired while its holder still ran): the cursor only moves forward from the value a run started from, so no rows are skipped; `rivet state show` shows the cursor and its runs"
            })
          }
        }
        yield* tx.run(
          `UPDATE rivet_runs SET status = ?, finished_at = ?, row_count = ?, part_count = ?, byte_count = ?, error = ?
           WHERE run_id = ?`,
          [outcome.status, outcome.finishedAt, outcome.rows, outcome.parts, outcome.bytes, nullable(outcome.error), runId]
        )
        const parts = extra?.parts ?? []
        if (parts.length > 0) {
          const last = yield* tx.all(
            "SELECT COALESCE(MAX(ordinal), -1) AS last FROM rivet_parts WHERE run_id = ? AND unit IS NULL",
            [runId]
          )
          const firstOrdinal = int(last[0]?.["last"] ?? -1) + 1
          yield* insertParts(tx, { runId, exportName, unit: undefined, firstOrdinal, committedAt: now }, parts)
        }
        if (extra?.cursor !== undefined) yield* upsertCursor(tx, exportName, extra.cursor, now)
      })
    )
  })

  const { acquireLease, renewLease, releaseLease, leases } = makeSqlLeases(db)

  const run = Effect.fn("StateStore.run")(function* (runId: string) {
    const rows = yield* db.all(`SELECT ${RUN_COLUMNS} FROM rivet_runs WHERE run_id = ?`, [runId])
    return Option.map(Option.fromNullable(rows[0]), toRun)
  })

  const unfinishedRun = Effect.fn("StateStore.unfinishedRun")(function* (exportName: string) {
    const rows = yield* db.all(
      `SELECT ${RUN_COLUMNS} FROM rivet_runs WHERE export_name = ? AND ${UNFINISHED} ORDER BY ${NEWEST_RUN_FIRST} LIMIT 1`,
      [exportName]
    )
    return Option.map(Option.fromNullable(rows[0]), toRun)
  })

  const savePlan = Effect.fn("StateStore.savePlan")(function* (runId: string, units: ReadonlyArray<UnitRecord>) {
    yield* db.transaction((tx) =>
      Effect.gen(function* () {
        yield* exportOfRun(tx, runId)
        // A plan saved again (a resumed run) never turns a done unit back into a pending one.
        yield* Effect.forEach(
          units,
          (unit) =>
            tx.run(
              `INSERT INTO rivet_units (run_id, idx, spec, status, row_count, last_key) VALUES (?, ?, ?, 'pending', ?, ?)
               ON CONFLICT (run_id, idx) DO NOTHING`,
              [runId, unit.index, unit.spec, unit.rows, nullable(unit.lastKey)]
            ),
          { discard: true }
        )
      })
    )
  })

  const units = Effect.fn("StateStore.units")(function* (runId: string) {
    const rows = yield* db.all(
      "SELECT idx, spec, status, row_count, last_key FROM rivet_units WHERE run_id = ? ORDER BY idx",
      [runId]
    )
    return rows.map(toUnit)
  })

  const commitUnit = Effect.fn("StateStore.commitUnit")(function* (
    runId: string,
    unit: UnitRecord,
    parts: ReadonlyArray<PartRecord>
  ) {
    const now = yield* nowIso
    yield* db.transaction((tx) =>
      Effect.gen(function* () {
        const exportName = yield* exportOfRun(tx, runId)
        yield* tx.run(
          `INSERT INTO rivet_units (run_id, idx, spec, status, row_count, last_key) VALUES (?, ?, ?, 'done', ?, ?)
           ON CONFLICT (run_id, idx) DO UPDATE SET spec = excluded.spec, status = 'done',
             row_count = excluded.row_count, last_key = excluded.last_key`,
          [runId, unit.index, unit.spec, unit.rows, nullable(unit.lastKey)]
        )
        yield* tx.run("DELETE FROM rivet_parts WHERE run_id = ? AND unit = ?", [runId, unit.index])
        yield* insertParts(tx, { runId, exportName, unit: unit.index, firstOrdinal: 0, committedAt: now }, parts)
      })
    )
  })

  const parts = Effect.fn("StateStore.parts")(function* (runId: string) {
    // Unit-less parts (given to finishRun) come last; NULL ordering differs between the backends, hence the CASE.
    const rows = yield* db.all(
      `SELECT ${PART_COLUMNS} FROM rivet_parts p
       WHERE p.run_id = ? AND (p.unit IS NULL OR EXISTS (
         SELECT 1 FROM rivet_units u WHERE u.run_id = p.run_id AND u.idx = p.unit AND u.status = 'done'))
       ORDER BY CASE WHEN p.unit IS NULL THEN 1 ELSE 0 END, p.unit, p.ordinal, p.path`,
      [runId]
    )
    return rows.map(toPart)
  })

  const runs = Effect.fn("StateStore.runs")(function* (exportName: string | undefined, limit: number) {
    const rows =
      exportName === undefined
        ? yield* db.all(`SELECT ${RUN_COLUMNS} FROM rivet_runs ORDER BY ${NEWEST_RUN_FIRST} LIMIT ?`, [limit])
        : yield* db.all(
            `SELECT ${RUN_COLUMNS} FROM rivet_runs WHERE export_name = ? ORDER BY ${NEWEST_RUN_FIRST} LIMIT ?`,
            [exportName, limit]
          )
    return rows.map(toRun)
  })

  const files = Effect.fn("StateStore.files")(function* (exportName: string | undefined, limit: number) {
    // Newest commit first; the parts of one commit in their own order.
    const order = "ORDER BY committed_at DESC, run_id DESC, CASE WHEN unit IS NULL THEN 1 ELSE 0 END, unit, ordinal"
    const rows =
      exportName === undefined
        ? yield* db.all(`SELECT ${PART_COLUMNS} FROM rivet_parts ${order} LIMIT ?`, [limit])
        : yield* db.all(`SELECT ${PART_COLUMNS} FROM rivet_parts WHERE export_name = ? ${order} LIMIT ?`, [
            exportName,
            limit
          ])
    return rows.map(toPart)
  })

  const exports = Effect.gen(function* () {
    const cursors = yield* db.all("SELECT export_name, column_name, value, value_type FROM rivet_cursors")
    const lastRuns = yield* db.all(
      `SELECT ${RUN_COLUMNS} FROM (
         SELECT r.*, ROW_NUMBER() OVER (PARTITION BY export_name ORDER BY ${NEWEST_RUN_FIRST}) AS newest
         FROM rivet_runs r) ranked
       WHERE newest = 1`
    )
    const leases = yield* db.all(`SELECT ${LEASE_COLUMNS} FROM rivet_leases WHERE lease_key = export_name`)
    const byName = new Map<string, { cursor?: CursorState; lastRun?: RunRecord; lease?: LeaseHolder }>()
    for (const row of cursors) byName.set(text(row["export_name"]), { cursor: toCursor(row) })
    for (const row of lastRuns) {
      const name = text(row["export_name"])
      byName.set(name, { ...byName.get(name), lastRun: toRun(row) })
    }
    // A lease alone (a first run still under way) is not "state" until the run is journaled.
    for (const row of leases) {
      const name = text(row["export_name"])
      const known = byName.get(name)
      if (known) byName.set(name, { ...known, lease: toLease(row) })
    }
    return [...byName.keys()]
      .sort()
      .map((exportName): ExportSummary => ({ exportName, ...byName.get(exportName) }))
  }).pipe(Effect.withSpan("StateStore.exports"))

  const reset = Effect.fn("StateStore.reset")(function* (exportName: string) {
    const now = yield* nowIso
    const outcome = yield* db.transaction((tx) =>
      Effect.gen(function* () {
        // Resetting under a running export would pull its cursor and checkpoints away while it runs.
        const held = yield* tx.all(`SELECT ${LEASE_COLUMNS} FROM rivet_leases WHERE export_name = ? AND expires_at > ?`, [
          exportName,
          now
        ])
        if (held[0] !== undefined) return { _tag: "Held" as const, holder: toLease(held[0]) }
        const cursorsCleared = yield* tx.run("DELETE FROM rivet_cursors WHERE export_name = ?", [exportName])
        yield* tx.run("DELETE FROM rivet_schema_baselines WHERE export_name = ?", [exportName])
        const abandonedRuns = yield* tx.run(
          `UPDATE rivet_runs SET status = 'abandoned', finished_at = COALESCE(finished_at, ?)
           WHERE export_name = ? AND ${UNFINISHED}`,
          [now, exportName]
        )
        return { _tag: "Reset" as const, cursor: cursorsCleared > 0, abandonedRuns }
      })
    )
    if (outcome._tag === "Reset") return { cursor: outcome.cursor, abandonedRuns: outcome.abandonedRuns }
    // Failed outside the transaction: the backend retries transient errors, and a held lease is no reason to wait
    // there (retryable here means "try the command again later").
    const { holder } = outcome
    return yield* new StateError({
      message: `export '${exportName}' is being run by ${holder.runId === undefined ? "a run not journaled yet" : `run '${holder.runId}'`} (pid ${holder.pid} on ${holder.host}): its state is not reset while it runs`,
      hint: `reset it once that run has finished (its lease expires at ${holder.expiresAt} if its process is gone)`,
      retryable: true
    })
  })

  const schemaBaseline = Effect.fn("StateStore.schemaBaseline")(function* (exportName: string) {
    const rows = yield* db.all(
      "SELECT fingerprint, columns, updated_at FROM rivet_schema_baselines WHERE export_name = ?",
      [exportName]
    )
    return Option.map(
      Option.fromNullable(rows[0]),
      (row): SchemaBaseline => ({
        fingerprint: text(row["fingerprint"]),
        columns: text(row["columns"]),
        updatedAt: text(row["updated_at"])
      })
    )
  })

  const setSchemaBaseline = Effect.fn("StateStore.setSchemaBaseline")(function* (
    exportName: string,
    baseline: SchemaBaseline
  ) {
    yield* db.run(
      `INSERT INTO rivet_schema_baselines (export_name, fingerprint, columns, updated_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (export_name) DO UPDATE SET fingerprint = excluded.fingerprint, columns = excluded.columns,
         updated_at = excluded.updated_at`,
      [exportName, baseline.fingerprint, baseline.columns, baseline.updatedAt]
    )
  })

  return {
    location: db.location,
    cursor,
    beginRun,
    reopenRun,
    finishRun,
    run,
    unfinishedRun,
    savePlan,
    units,
    commitUnit,
    parts,
    runs,
    files,
    exports,
    reset,
    acquireLease,
    renewLease,
    releaseLease,
    leases,
    schemaBaseline,
    setSchemaBaseline
  }
}
