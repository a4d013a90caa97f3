import type { ResetOutcome } from "../commands/state-reset.js"
import type { CommittedPart, ExportSummary, LeaseHolder, RunRecord } from "../state/store.js"
import { formatCount } from "./render.js"
import { renderTable } from "./table.js"

/** What `rivet state show|files` print: aligned tables for people, snake_case JSON (as in manifests) for programs. */

const runJson = (run: RunRecord) => ({
  run_id: run.runId,
  mode: run.mode,
  status: run.status,
  started_at: run.startedAt,
  finished_at: run.finishedAt ?? null,
  rows: run.rows,
  parts: run.parts,
  bytes: run.bytes,
  error: run.error ?? null,
  checkpointed: run.checkpointed
})

const leaseJson = (lease: LeaseHolder) => ({
  run_id: lease.runId ?? null,
  pid: lease.pid,
  host: lease.host,
  acquired_at: lease.acquiredAt,
  heartbeat_at: lease.heartbeatAt,
  expires_at: lease.expiresAt
})

export const summariesJson = (summaries: ReadonlyArray<ExportSummary>) =>
  summaries.map((summary) => ({
    export_name: summary.exportName,
    cursor: summary.cursor ? { column: summary.cursor.column, value: summary.cursor.value, type: summary.cursor.type } : null,
    last_run: summary.lastRun ? runJson(summary.lastRun) : null,
    lease: summary.lease ? leaseJson(summary.lease) : null
  }))

export const filesJson = (parts: ReadonlyArray<CommittedPart>) =>
  parts.map((part) => ({
    run_id: part.runId,
    export_name: part.exportName,
    unit: part.unit ?? null,
    path: part.path,
    rows: part.rows,
    size_bytes: part.size_bytes,
    content_fingerprint: part.content_fingerprint,
    committed_at: part.committedAt
  }))

const NONE = "-"

/** One line per export whose lease is held: which run has it, and until when. */
const renderLeases = (summaries: ReadonlyArray<ExportSummary>, now: number): string =>
  summaries
    .flatMap(({ exportName, lease }) => {
      if (!lease) return []
      const holder = `${lease.runId === undefined ? "a run not journaled yet" : `run '${lease.runId}'`} (pid ${lease.pid} on ${lease.host})`
      return Date.parse(lease.expiresAt) > now
        ? [`${exportName} is being run by ${holder} since ${lease.acquiredAt}; last heartbeat ${lease.heartbeatAt}, lease expires ${lease.expiresAt}`]
        : [`${exportName}: the lease of ${holder} expired at ${lease.expiresAt} (its process died or stalled); the next run takes it over`]
    })
    .map((line) => `\n${line}`)
    .join("")

export const renderSummaries = (summaries: ReadonlyArray<ExportSummary>, now = Date.now()): string =>
  renderSummaryTable(summaries) + renderLeases(summaries, now)

const renderSummaryTable = (summaries: ReadonlyArray<ExportSummary>): string =>
  renderTable(
    ["EXPORT", "CURSOR", "LAST RUN", "STATUS", "ROWS"],
    summaries.map(({ exportName, cursor, lastRun }) => [
      exportName,
      cursor ? `${cursor.column} > ${cursor.value}` : NONE,
      lastRun?.startedAt ?? NONE,
      lastRun?.status ?? NONE,
      lastRun ? formatCount(lastRun.rows) : NONE
    ])
  )

export const renderFiles = (parts: ReadonlyArray<CommittedPart>): string =>
  renderTable(
    ["RUN ID", "FILE", "ROWS", "BYTES", "COMMITTED"],
    parts.map((part) => [part.runId, part.path, formatCount(part.rows), formatCount(part.size_bytes), part.committedAt])
  )

export const renderReset = (exportName: string, result: ResetOutcome) =>
  [
    ...[{ exportName, ...result }, ...(result.together ?? [])].map(
      (cleared) =>
        `State reset for export '${cleared.exportName}': ${cleared.cursor ? "cursor cleared" : "no cursor was set"}, ` +
        `${cleared.abandonedRuns} unfinished run(s) abandoned.`
    ),
    ...(result.together === undefined || result.together.length === 0
      ? []
      : [`(${result.together.map((other) => `'${other.exportName}'`).join(", ")} read${result.together.length === 1 ? "s" : ""} the same replication slot: reset together.)`]),
    ...(result.droppedSlot === undefined
      ? []
      : [
          `Dropped replication slot ${result.droppedSlot.name}: ` +
            (result.droppedSlot.snapshot
              ? "the next run starts from a new snapshot."
              : "the next run creates it again and starts with the changes from then on (initial: none).")
        ])
  ].join("\n")
