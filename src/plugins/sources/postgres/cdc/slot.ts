import type postgres from "postgres"
import { quoteIdent } from "../statement.js"

/**
 * The server-side objects of an export's change log, managed on a normal connection: its logical replication slot
 * (the reading position the server keeps WAL for) and its publication (which tables the slot's changes cover).
 */

export interface SlotState {
  readonly plugin: string
  readonly database: string
  readonly active: boolean
  readonly activePid: number | null
  /** The slot's confirmed position, PostgreSQL's text. */
  readonly confirmed: string | null
  /** WAL the server keeps for the slot, from its restart position to the current one. */
  readonly retainedBytes: number | null
  /** `reserved`, `extended`, `unreserved` or `lost` (PostgreSQL 13+). */
  readonly walStatus: string | null
}

export interface QualifiedTable {
  readonly schema: string
  readonly name: string
}

export const tableText = (table: QualifiedTable): string => `${quoteIdent(table.schema)}.${quoteIdent(table.name)}`

export const readSlot = async (sql: postgres.Sql, slot: string): Promise<SlotState | undefined> => {
  const [row] = await sql.unsafe(
    `SELECT plugin::text, database::text, active, active_pid, confirmed_flush_lsn::text AS confirmed,
       pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn)::text AS retained, wal_status::text
     FROM pg_catalog.pg_replication_slots WHERE slot_name = $1`,
    [slot]
  )
  if (row === undefined) return undefined
  return {
    plugin: String(row["plugin"]),
    database: String(row["database"]),
    active: row["active"] === true || row["active"] === "t" || row["active"] === "true",
    activePid: row["active_pid"] === null ? null : Number(row["active_pid"]),
    confirmed: row["confirmed"] === null ? null : String(row["confirmed"]),
    retainedBytes: row["retained"] === null ? null : Number(row["retained"]),
    walStatus: row["wal_status"] === null ? null : String(row["wal_status"])
  }
}

/**
 * Drops the slot; a walsender still holding it (a run killed a moment ago, whose connection the server has not
 * noticed closing yet) is terminated first. False when there was no slot.
 */
export const dropSlot = async (sql: postgres.Sql, slot: string): Promise<boolean> => {
  for (let attempt = 0; ; attempt++) {
    const state = await readSlot(sql, slot)
    if (state === undefined) return false
    if (state.activePid !== null) await sql.unsafe(`SELECT pg_terminate_backend($1)`, [state.activePid])
    try {
      await sql.unsafe(`SELECT pg_drop_replication_slot($1)`, [slot])
      return true
    } catch (cause) {
      // 55006: still active (the terminated walsender has not exited yet).
      if ((cause as { code?: string }).code !== "55006" || attempt >= 50) throw cause
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}

/** Whether the publication exists and covers the table: `missing`, `covers`, or `lacks` the table. */
export const publicationCovers = async (
  sql: postgres.Sql,
  publication: string,
  table: QualifiedTable
): Promise<"missing" | "covers" | "lacks"> => {
  const [row] = await sql.unsafe(
    `SELECT EXISTS (SELECT 1 FROM pg_catalog.pg_publication_tables
       WHERE pubname = $1 AND schemaname = $2 AND tablename = $3) AS covers
     FROM pg_catalog.pg_publication WHERE pubname = $1`,
    [publication, table.schema, table.name]
  )
  if (row === undefined) return "missing"
  return row["covers"] === true || row["covers"] === "t" || row["covers"] === "true" ? "covers" : "lacks"
}

/** The publication of the exports reading a slot, publishing what `mode: cdc` captures (not TRUNCATE). */
export const createPublication = (sql: postgres.Sql, publication: string, tables: ReadonlyArray<QualifiedTable>) =>
  sql.unsafe(`CREATE PUBLICATION ${quoteIdent(publication)} FOR TABLE ${tables.map(tableText).join(", ")} WITH (publish = 'insert, update, delete')`)

/** The table's replica identity: `d`efault (primary key), `n`othing, `f`ull, `i`ndex; undefined without the table. */
export const replicaIdentity = async (sql: postgres.Sql, table: QualifiedTable): Promise<string | undefined> => {
  const [row] = await sql.unsafe(
    `SELECT c.relreplident::text AS identity,
       EXISTS (SELECT 1 FROM pg_catalog.pg_index i WHERE i.indrelid = c.oid AND i.indisprimary) AS has_key
     FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relname = $2`,
    [table.schema, table.name]
  )
  if (row === undefined) return undefined
  const identity = String(row["identity"])
  const hasKey = row["has_key"] === true || row["has_key"] === "t" || row["has_key"] === "true"
  // DEFAULT without a primary key logs nothing for updates and deletes, like NOTHING.
  return identity === "d" && !hasKey ? "n" : identity
}

/** The server's current WAL position, PostgreSQL's text. */
export const currentPosition = async (sql: postgres.Sql): Promise<string> => {
  const [row] = await sql.unsafe(`SELECT pg_current_wal_lsn()::text AS lsn`)
  return String(row!["lsn"])
}
