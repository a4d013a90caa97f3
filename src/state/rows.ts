import { int, optText, text, type SqlRow, type SqlValue } from "./sql.js"
import type { CommittedPart, CursorState, LeaseHolder, RunRecord, RunStatus, UnitRecord } from "./store.js"

/** Column lists and row → record mappers shared by the store's queries. */

export const RUN_COLUMNS =
  "run_id, export_name, mode, started_at, finished_at, status, row_count, part_count, byte_count, error, checkpointed, plan_fingerprint, run_identity"
/** One `?` per column of `RUN_COLUMNS`, for inserts. */
export const RUN_PLACEHOLDERS = RUN_COLUMNS.split(",").map(() => "?").join(", ")
export const PART_COLUMNS = "run_id, export_name, unit, path, row_count, size_bytes, fingerprint, committed_at, partition_values"
/** Runs that `rivet run --resume` may continue (and that `reset` abandons). */
export const UNFINISHED = "checkpointed = 1 AND status IN ('running', 'failed', 'interrupted')"
export const NEWEST_RUN_FIRST = "started_at DESC, run_id DESC"

/** A run's values in `RUN_COLUMNS` order. */
export const runValues = (run: RunRecord): Array<SqlValue> => [
  run.runId,
  run.exportName,
  run.mode,
  run.startedAt,
  run.finishedAt ?? null,
  run.status,
  run.rows,
  run.parts,
  run.bytes,
  run.error ?? null,
  run.checkpointed ? 1 : 0,
  run.planFingerprint ?? null,
  run.identity ?? null
]

export const toRun = (row: SqlRow): RunRecord => ({
  runId: text(row["run_id"]),
  exportName: text(row["export_name"]),
  mode: text(row["mode"]),
  startedAt: text(row["started_at"]),
  finishedAt: optText(row["finished_at"]),
  status: text(row["status"]) as RunStatus,
  rows: int(row["row_count"]),
  parts: int(row["part_count"]),
  bytes: int(row["byte_count"]),
  error: optText(row["error"]),
  checkpointed: int(row["checkpointed"]) === 1,
  planFingerprint: optText(row["plan_fingerprint"]),
  identity: optText(row["run_identity"])
})

/** The stored `partition_values` JSON (written by `insertParts` from the part's record), when there is one. */
const partitionValuesOf = (stored: unknown): { readonly partition?: Readonly<Record<string, string | null>> } =>
  stored === null || stored === undefined ? {} : { partition: JSON.parse(text(stored)) as Readonly<Record<string, string | null>> }

export const toPart = (row: SqlRow): CommittedPart => ({
  runId: text(row["run_id"]),
  exportName: text(row["export_name"]),
  unit: row["unit"] === null || row["unit"] === undefined ? undefined : int(row["unit"]),
  path: text(row["path"]),
  rows: int(row["row_count"]),
  size_bytes: int(row["size_bytes"]),
  content_fingerprint: text(row["fingerprint"]),
  committedAt: text(row["committed_at"]),
  ...partitionValuesOf(row["partition_values"])
})

export const toUnit = (row: SqlRow): UnitRecord => ({
  index: int(row["idx"]),
  spec: text(row["spec"]),
  status: text(row["status"]) === "done" ? "done" : "pending",
  rows: int(row["row_count"]),
  lastKey: optText(row["last_key"])
})

export const toCursor = (row: SqlRow): CursorState => ({
  column: text(row["column_name"]),
  value: text(row["value"]),
  type: text(row["value_type"])
})

export const LEASE_COLUMNS = "lease_key, export_name, token, run_id, pid, host, acquired_at, heartbeat_at, expires_at"

export const toLease = (row: SqlRow): LeaseHolder => ({
  key: text(row["lease_key"]),
  exportName: text(row["export_name"]),
  runId: optText(row["run_id"]),
  pid: int(row["pid"]),
  host: text(row["host"]),
  acquiredAt: text(row["acquired_at"]),
  heartbeatAt: text(row["heartbeat_at"]),
  expiresAt: text(row["expires_at"])
})
