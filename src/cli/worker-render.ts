import type { UnitLease } from "../state/store.js"

/** What `rivet state show` adds for an export's latest distributed run (`rivet run --worker`): units per worker. */

export interface WorkerRow {
  readonly worker: string
  readonly done: number
  /** Units the worker holds a live claim on right now. */
  readonly running: number
  /** Seconds since its newest heartbeat or commit. */
  readonly lastSeenS: number
  /** Of its running units, the soonest claim expiry, in seconds from now (negative: expired). */
  readonly expiresInS: number | undefined
}

export interface DistributedRun {
  readonly runId: string
  readonly units: number
  readonly done: number
  /** Units no worker holds a live claim on. */
  readonly waiting: number
  /** Units claimed more than once: a worker's claim expired and another redid them. */
  readonly redone: number
  readonly workers: ReadonlyArray<WorkerRow>
}

const seconds = (ms: number) => Math.round(ms / 100) / 10

export const distributedRunOf = (leases: ReadonlyArray<UnitLease>, now: number): DistributedRun | undefined => {
  const first = leases[0]
  if (first === undefined) return undefined
  const live = (unit: UnitLease) => unit.status === "pending" && unit.expiresAt !== undefined && Date.parse(unit.expiresAt) > now
  const byWorker = new Map<string, Array<UnitLease>>()
  for (const unit of leases) {
    if (unit.worker === undefined || (unit.status === "pending" && !live(unit))) continue
    byWorker.set(unit.worker, [...(byWorker.get(unit.worker) ?? []), unit])
  }
  const workers = [...byWorker.entries()].map(([worker, units]): WorkerRow => {
    const running = units.filter(live)
    const seen = Math.max(...units.map((unit) => Date.parse(unit.heartbeatAt ?? unit.claimedAt ?? "") || 0))
    const expiries = running.map((unit) => Date.parse(unit.expiresAt!))
    return {
      worker,
      done: units.filter((unit) => unit.status === "done").length,
      running: running.length,
      lastSeenS: seconds(now - seen),
      expiresInS: expiries.length === 0 ? undefined : seconds(Math.min(...expiries) - now)
    }
  })
  return {
    runId: first.runId,
    units: leases.length,
    done: leases.filter((unit) => unit.status === "done").length,
    waiting: leases.filter((unit) => unit.status === "pending" && !live(unit)).length,
    redone: leases.filter((unit) => unit.claims > 1).length,
    workers: workers.sort((a, b) => a.worker.localeCompare(b.worker))
  }
}

export const renderDistributedRun = (exportName: string, run: DistributedRun): string =>
  [
    `${exportName}: distributed run '${run.runId}': ${run.done} of ${run.units} chunks done, ${run.waiting} waiting for a worker${run.redone > 0 ? `, ${run.redone} redone after a lost claim` : ""}`,
    ...run.workers.map(
      (row) =>
        `  worker ${row.worker}: ${row.done} done, ${row.running} running; last heartbeat ${row.lastSeenS} s ago` +
        (row.expiresInS === undefined ? "" : row.expiresInS >= 0 ? `, claim expires in ${row.expiresInS} s` : `, claim expired ${-row.expiresInS} s ago`)
    )
  ].join("\n")

export const distributedRunJson = (run: DistributedRun) => ({
  run_id: run.runId,
  units: run.units,
  done: run.done,
  waiting: run.waiting,
  redone: run.redone,
  workers: run.workers.map((row) => ({
    worker: row.worker,
    done: row.done,
    running: row.running,
    last_heartbeat_s: row.lastSeenS,
    claim_expires_in_s: row.expiresInS ?? null
  }))
})
