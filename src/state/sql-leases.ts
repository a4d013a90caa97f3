import * as Clock from "effect/Clock"
import * as Effect from "effect/Effect"
import { StateError } from "../core/errors.js"
import { LEASE_COLUMNS, toLease } from "./rows.js"
import { text, type SqlBackend, type SqlExecutor } from "./sql.js"
import type { LeaseAcquisition, LeaseProof, LeaseRenewal, LeaseRequest } from "./store.js"

/** The export leases of the state store (table `rivet_leases`): one run per export at a time. */

const leaseFields = (request: LeaseRequest, now: string, expiresAt: string) => ({
  exportName: request.exportName,
  runId: undefined,
  pid: request.pid,
  host: request.host,
  acquiredAt: now,
  heartbeatAt: now,
  expiresAt
})

/** Fails unless `proof` still holds its lease: a run that lost its lease must not write as if it had it. */
export const requireLease = (tx: SqlExecutor, proof: LeaseProof, runId: string) =>
  Effect.flatMap(tx.all(`SELECT ${LEASE_COLUMNS} FROM rivet_leases WHERE lease_key = ?`, [proof.key]), (rows) => {
    const row = rows[0]
    if (row !== undefined && text(row["token"]) === proof.token) return Effect.void
    const holder = row === undefined ? undefined : toLease(row)
    return Effect.fail(
      new StateError({
        message: `run '${runId}' no longer holds the lease on '${proof.key}'${holder ? `: run ${holder.runId ?? "(not journaled yet)"} (pid ${holder.pid} on ${holder.host}) took it over` : ""}`,
        hint: "its heartbeat stopped for longer than the lease's time to live (the process was paused or could not reach the state); raise RIVET_LEASE_TTL if runs stall that long"
      })
    )
  })

/** Taking, renewing, releasing and listing leases over any `SqlBackend`. */
export const makeSqlLeases = (db: SqlBackend) => {
  const acquireLease = Effect.fn("StateStore.acquireLease")(function* (request: LeaseRequest) {
    const now = yield* Clock.currentTimeMillis
    const nowText = new Date(now).toISOString()
    const expiresAt = new Date(now + request.ttlMs).toISOString()
    return yield* db.transaction((tx): Effect.Effect<LeaseAcquisition, StateError> =>
      Effect.gen(function* () {
        const rows = yield* tx.all(`SELECT ${LEASE_COLUMNS} FROM rivet_leases WHERE lease_key = ?`, [request.key])
        const current = rows[0]
        const fields = [request.exportName, request.token, request.pid, request.host, nowText, nowText, expiresAt]
        // Both writes are conditional, so of two runs racing for the lease (PostgreSQL runs them concurrently)
        // exactly one changes the row; the other reads the winner back and reports it as the holder.
        const heldBy = Effect.map(
          tx.all(`SELECT ${LEASE_COLUMNS} FROM rivet_leases WHERE lease_key = ?`, [request.key]),
          (again): LeaseAcquisition => ({ _tag: "Held", holder: toLease(again[0] ?? current ?? {}) })
        )
        if (current === undefined) {
          const inserted = yield* tx.run(
            `INSERT INTO rivet_leases (lease_key, export_name, token, pid, host, acquired_at, heartbeat_at, expires_at)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?) ON CONFLICT (lease_key) DO NOTHING`,
            [request.key, ...fields]
          )
          if (inserted === 0) return yield* heldBy
          return { _tag: "Acquired", holder: { key: request.key, ...leaseFields(request, nowText, expiresAt) } } as const
        }
        const holder = toLease(current)
        const ours = text(current["token"]) === request.token
        if (!ours && holder.expiresAt > nowText && request.isGone?.(holder) !== true) return { _tag: "Held", holder } as const
        const changed = yield* tx.run(
          `UPDATE rivet_leases SET export_name = ?, token = ?, run_id = NULL, pid = ?, host = ?, acquired_at = ?,
             heartbeat_at = ?, expires_at = ? WHERE lease_key = ? AND token = ?`,
          [...fields, request.key, text(current["token"])]
        )
        if (changed === 0) return yield* heldBy
        return {
          _tag: "Acquired",
          holder: { key: request.key, ...leaseFields(request, nowText, expiresAt) },
          ...(ours ? {} : { takenOver: holder })
        } as const
      })
    )
  })

  const renewLease = Effect.fn("StateStore.renewLease")(function* (
    proof: LeaseProof,
    ttlMs: number,
    runId?: string | undefined
  ) {
    const now = yield* Clock.currentTimeMillis
    const nowText = new Date(now).toISOString()
    const expiresAt = new Date(now + ttlMs).toISOString()
    return yield* db.transaction((tx): Effect.Effect<LeaseRenewal, StateError> =>
      Effect.gen(function* () {
        yield* tx.run(
          `UPDATE rivet_leases SET heartbeat_at = ?, expires_at = ?, run_id = COALESCE(?, run_id)
           WHERE lease_key = ? AND token = ?`,
          [nowText, expiresAt, runId ?? null, proof.key, proof.token]
        )
        const rows = yield* tx.all(`SELECT ${LEASE_COLUMNS} FROM rivet_leases WHERE lease_key = ?`, [proof.key])
        const row = rows[0]
        if (row === undefined) return { _tag: "Lost" } as const
        return text(row["token"]) === proof.token
          ? ({ _tag: "Renewed", holder: toLease(row) } as const)
          : ({ _tag: "Lost", holder: toLease(row) } as const)
      })
    )
  })

  const releaseLease = Effect.fn("StateStore.releaseLease")(function* (proof: LeaseProof) {
    yield* db.run("DELETE FROM rivet_leases WHERE lease_key = ? AND token = ?", [proof.key, proof.token])
  })

  const leases = Effect.fn("StateStore.leases")(function* (exportName?: string | undefined) {
    const rows =
      exportName === undefined
        ? yield* db.all(`SELECT ${LEASE_COLUMNS} FROM rivet_leases ORDER BY lease_key`)
        : yield* db.all(`SELECT ${LEASE_COLUMNS} FROM rivet_leases WHERE export_name = ? ORDER BY lease_key`, [
            exportName
          ])
    return rows.map(toLease)
  })

  return { acquireLease, renewLease, releaseLease, leases }
}
