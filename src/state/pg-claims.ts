import * as Effect from "effect/Effect"
import { randomUUID } from "node:crypto"
import type { StateError } from "../core/errors.js"
import type { PartRecord } from "../core/manifest.js"
import { RUN_COLUMNS, RUN_PLACEHOLDERS, runValues, toUnit } from "./rows.js"
import { insertParts } from "./sql-store.js"
import { int, optText, text, type SqlBackend, type SqlExecutor, type SqlValue } from "./sql.js"
import type { ClaimResult, RunRecord, UnitClaim, UnitClaimsShape, UnitLease, UnitRecord } from "./store.js"

/**
 * Units of a distributed run claimed by worker processes (PostgreSQL state only): the claim columns of
 * `rivet_units` (migration 3). Every time is the state database's own clock, as ISO-8601 UTC text that orders like
 * the instant it names, so workers on machines whose clocks disagree still agree on when a claim expires.
 */

const ISO = `'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'`
const NOW = `to_char(clock_timestamp() AT TIME ZONE 'UTC', ${ISO})`
/** Now plus the bound parameter's milliseconds. */
const NOW_PLUS = `to_char((clock_timestamp() + ?::float8 * interval '1 millisecond') AT TIME ZONE 'UTC', ${ISO})`

/** Units per INSERT when a plan is saved: a 2 TB table may well have 100 000 chunks. */
const INSERT_BATCH = 500

const insertUnits = (tx: SqlExecutor, runId: string, units: ReadonlyArray<UnitRecord>) =>
  Effect.forEach(
    Array.from({ length: Math.ceil(units.length / INSERT_BATCH) }, (_, i) => units.slice(i * INSERT_BATCH, (i + 1) * INSERT_BATCH)),
    (batch) =>
      tx.run(
        `INSERT INTO rivet_units (run_id, idx, spec, status, row_count) VALUES ${batch.map(() => "(?, ?, ?, 'pending', 0)").join(", ")}`,
        batch.flatMap((unit): Array<SqlValue> => [runId, unit.index, unit.spec])
      ),
    { discard: true }
  )

export const makePgClaims = (db: SqlBackend): UnitClaimsShape => {
  const createRun = Effect.fn("StateStore.createDistributedRun")(function* (run: RunRecord, units: ReadonlyArray<UnitRecord>) {
    return yield* db.transaction((tx) =>
      Effect.gen(function* () {
        // The unique run id decides which of several workers arriving together plans the run: the others' inserts
        // wait for the first transaction and then insert nothing, and by then the whole plan is visible.
        const inserted = yield* tx.run(
          `INSERT INTO rivet_runs (${RUN_COLUMNS}) VALUES (${RUN_PLACEHOLDERS}) ON CONFLICT (run_id) DO NOTHING`,
          runValues(run)
        )
        if (inserted === 0) return false
        yield* insertUnits(tx, run.runId, units)
        return true
      })
    )
  })

  const claim = Effect.fn("StateStore.claimUnit")(function* (request: {
    readonly runId: string
    readonly worker: string
    readonly ttlMs: number
    readonly cap: number
  }) {
    const { runId } = request
    return yield* db.transaction((tx): Effect.Effect<ClaimResult, StateError> =>
      Effect.gen(function* () {
        // The run's row lock makes counting the live claims and taking one a single step across all workers.
        yield* tx.all("SELECT run_id FROM rivet_runs WHERE run_id = ? FOR UPDATE", [runId])
        const live = yield* tx.all(
          `SELECT COUNT(*) AS n FROM rivet_units
           WHERE run_id = ? AND status = 'pending' AND claim_token IS NOT NULL AND expires_at > ${NOW}`,
          [runId]
        )
        if (int(live[0]?.["n"]) >= request.cap) return { _tag: "Busy" } as const
        const free = yield* tx.all(
          `SELECT idx, spec, status, row_count, last_key FROM rivet_units
           WHERE run_id = ? AND status = 'pending' AND (claim_token IS NULL OR expires_at <= ${NOW})
           ORDER BY idx LIMIT 1 FOR UPDATE SKIP LOCKED`,
          [runId]
        )
        const row = free[0]
        if (row === undefined) {
          const pending = yield* tx.all("SELECT COUNT(*) AS n FROM rivet_units WHERE run_id = ? AND status = 'pending'", [runId])
          return int(pending[0]?.["n"]) > 0 ? ({ _tag: "Busy" } as const) : ({ _tag: "AllDone" } as const)
        }
        const unit = toUnit(row)
        const token = randomUUID()
        yield* tx.run(
          `UPDATE rivet_units SET worker = ?, claim_token = ?, claimed_at = ${NOW}, heartbeat_at = ${NOW},
             expires_at = ${NOW_PLUS}, claims = claims + 1 WHERE run_id = ? AND idx = ?`,
          [request.worker, token, request.ttlMs, runId, unit.index]
        )
        return { _tag: "Claimed", claim: { unit, token } } as const
      })
    )
  })

  const renew = Effect.fn("StateStore.renewUnit")(function* (runId: string, held: UnitClaim, ttlMs: number) {
    const changed = yield* db.run(
      `UPDATE rivet_units SET heartbeat_at = ${NOW}, expires_at = ${NOW_PLUS}
       WHERE run_id = ? AND idx = ? AND claim_token = ? AND status = 'pending'`,
      [ttlMs, runId, held.unit.index, held.token]
    )
    return changed > 0
  })

  const commit = Effect.fn("StateStore.commitClaimedUnit")(function* (
    runId: string,
    held: UnitClaim,
    rows: number,
    parts: ReadonlyArray<PartRecord>
  ) {
    return yield* db.transaction((tx) =>
      Effect.gen(function* () {
        const changed = yield* tx.run(
          `UPDATE rivet_units SET status = 'done', row_count = ?, heartbeat_at = ${NOW}
           WHERE run_id = ? AND idx = ? AND claim_token = ? AND status = 'pending'`,
          [rows, runId, held.unit.index, held.token]
        )
        if (changed === 0) return false
        const found = yield* tx.all("SELECT export_name, " + NOW + " AS now FROM rivet_runs WHERE run_id = ?", [runId])
        yield* tx.run("DELETE FROM rivet_parts WHERE run_id = ? AND unit = ?", [runId, held.unit.index])
        yield* insertParts(
          tx,
          { runId, exportName: text(found[0]?.["export_name"]), unit: held.unit.index, firstOrdinal: 0, committedAt: text(found[0]?.["now"]) },
          parts
        )
        return true
      })
    )
  })

  const release = Effect.fn("StateStore.releaseUnit")(function* (runId: string, held: UnitClaim) {
    yield* db.run(
      "UPDATE rivet_units SET claim_token = NULL, expires_at = NULL WHERE run_id = ? AND idx = ? AND claim_token = ? AND status = 'pending'",
      [runId, held.unit.index, held.token]
    )
  })

  const leases = Effect.fn("StateStore.unitLeases")(function* (exportName: string, runId?: string | undefined) {
    const columns = "u.run_id, u.idx, u.status, u.worker, u.claimed_at, u.heartbeat_at, u.expires_at, u.claims"
    const rows =
      runId !== undefined
        ? yield* db.all(
          `SELECT ${columns} FROM rivet_units u JOIN rivet_runs r ON r.run_id = u.run_id
           WHERE u.run_id = ? AND r.export_name = ? ORDER BY u.idx`,
          [runId, exportName]
        )
      : yield* db.all(
          `SELECT ${columns} FROM rivet_units u WHERE u.run_id = (
             SELECT r.run_id FROM rivet_runs r WHERE r.export_name = ?
               AND EXISTS (SELECT 1 FROM rivet_units c WHERE c.run_id = r.run_id AND c.claims > 0)
             ORDER BY r.started_at DESC, r.run_id DESC LIMIT 1)
           ORDER BY u.idx`,
          [exportName]
        )
    return rows.map(
      (row): UnitLease => ({
        runId: text(row["run_id"]),
        index: int(row["idx"]),
        status: text(row["status"]) === "done" ? "done" : "pending",
        worker: optText(row["worker"]),
        claimedAt: optText(row["claimed_at"]),
        heartbeatAt: optText(row["heartbeat_at"]),
        expiresAt: optText(row["expires_at"]),
        claims: int(row["claims"])
      })
    )
  })

  return { createRun, claim, renew, commit, release, leases }
}
