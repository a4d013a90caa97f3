import postgres from "postgres"
import { skipBecause } from "./environment.js"

/**
 * Logical replication on the test PostgreSQL, for the change-data-capture tests (`mode: cdc`, pgoutput). .ci/run sets
 * wal_level = logical on the machine's server and the embedded one starts with it (global-setup.ts); a developer's
 * own server may lack it, and then those tests are skipped, each with one line saying why.
 *
 * This module reads no vitest state, so the global setup can use it too: pass the URL (`testPgUrl()` in a test).
 */

const connect = (url: string) => postgres(url, { max: 1, connect_timeout: 5, onnotice: () => {} })

const where = (url: string) => {
  const parsed = new URL(url)
  return `${parsed.hostname}:${parsed.port || "5432"}${parsed.pathname}`
}

/**
 * Undefined when the server at `url` can do logical replication for its user (wal_level = logical, replication
 * slots allowed, the user a superuser or REPLICATION role); otherwise why not, as one short sentence.
 */
export const logicalReplication = async (url: string): Promise<string | undefined> => {
  const sql = connect(url)
  try {
    type Row = { walLevel: string; slots: string; user: string; rolsuper: boolean; rolreplication: boolean }
    const [row] = await sql<Array<Row>>`
      SELECT current_setting('wal_level') AS "walLevel", current_setting('max_replication_slots') AS slots,
             rolname AS "user", rolsuper, rolreplication
      FROM pg_roles WHERE rolname = current_user`
    if (row === undefined) return `the current role of PostgreSQL at ${where(url)} is not in pg_roles`
    if (row.walLevel !== "logical") {
      return `wal_level is ${row.walLevel}, not logical, on PostgreSQL at ${where(url)} (.ci/run sets it)`
    }
    if (Number(row.slots) === 0) return `max_replication_slots is 0 on PostgreSQL at ${where(url)}`
    if (!row.rolsuper && !row.rolreplication) {
      return `role ${row.user} may not replicate on PostgreSQL at ${where(url)} (neither superuser nor REPLICATION)`
    }
    return undefined
  } catch (cause) {
    const message = cause instanceof Error ? cause.message : String(cause)
    return `cannot ask PostgreSQL at ${where(url)} about logical replication: ${message}`
  } finally {
    await sql.end({ timeout: 1 })
  }
}

/** One probe per URL for the test file (each worker asks once). */
const probes = new Map<string, Promise<string | undefined>>()

/**
 * Skips the running test, with one line on stderr saying why (skipBecause), when the server at `url` cannot do
 * logical replication. First line of a test: `await skipWithoutLogical(context, testPgUrl())` (the skip throws).
 * For a whole file, `describe.skipIf((await logicalReplication(testPgUrl())) !== undefined)` (the global setup
 * prints the reason once).
 */
export const skipWithoutLogical = async (
  context: Parameters<typeof skipBecause>[0],
  url: string
): Promise<void> => {
  let probe = probes.get(url)
  if (probe === undefined) {
    probe = logicalReplication(url)
    probes.set(url, probe)
  }
  const reason = await probe
  if (reason !== undefined) return skipBecause(context, `no logical replication: ${reason}`)
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const ACTIVE_GRACE_MS = 5_000

/** Drops one slot over `sql` (connected to the slot's database), ending its walsender first; returns why not, if not. */
const dropSlot = async (sql: postgres.Sql, slot: string): Promise<string | undefined> => {
  const deadline = Date.now() + ACTIVE_GRACE_MS
  for (;;) {
    const [state] = await sql<Array<{ active: boolean; activePid: number | null }>>`
      SELECT active, active_pid AS "activePid" FROM pg_replication_slots WHERE slot_name = ${slot}`
    if (state === undefined) return undefined // gone (a temporary slot goes with its session)
    if (!state.active) {
      try {
        await sql`SELECT pg_drop_replication_slot(${slot})`
        return undefined
      } catch (cause) {
        const code = (cause as { code?: string }).code
        if (code === "42704") return undefined // undefined_object: dropped meanwhile
        if (code !== "55006" || Date.now() >= deadline) throw cause // 55006 object_in_use: a walsender took it again
      }
    } else if (state.activePid !== null) {
      await sql`SELECT pg_terminate_backend(${state.activePid})`
    }
    if (Date.now() >= deadline) {
      return `replication slot ${slot} is still active (PID ${String(state.activePid)}) after ${ACTIVE_GRACE_MS / 1000} s`
    }
    await sleep(100)
  }
}

/**
 * Drops every replication slot whose name starts with `prefix` (in whichever database it was made; a walsender still
 * streaming from it is terminated first, and an active slot is retried for up to 5 s) and every publication whose
 * name starts with `prefix` in the database of `url`. For afterEach/afterAll, so a test leaves no slot behind even
 * when it fails: a slot holds WAL on the server until it is dropped. Throws when a slot could not be dropped.
 */
export const dropSlots = async (url: string, prefix: string): Promise<void> => {
  if (prefix === "") throw new Error("dropSlots needs a non-empty prefix")
  const sql = connect(url)
  const problems: Array<string> = []
  try {
    const [here] = await sql<Array<{ db: string }>>`SELECT current_database() AS db`
    const slots = (
      await sql<Array<{ slot: string; db: string | null }>>`
        SELECT slot_name::text AS slot, database::text AS db FROM pg_replication_slots`
    ).filter((row) => row.slot.startsWith(prefix))
    // A logical slot can only be dropped from its own database.
    const elsewhere = new Map<string, Array<string>>()
    for (const { slot, db } of slots) {
      if (db === null || db === here?.db) {
        const problem = await dropSlot(sql, slot)
        if (problem !== undefined) problems.push(problem)
      } else {
        elsewhere.set(db, [...(elsewhere.get(db) ?? []), slot])
      }
    }
    for (const [db, names] of elsewhere) {
      const other = new URL(url)
      other.pathname = `/${encodeURIComponent(db)}`
      const otherSql = connect(other.toString())
      try {
        for (const slot of names) {
          const problem = await dropSlot(otherSql, slot)
          if (problem !== undefined) problems.push(problem)
        }
      } finally {
        await otherSql.end({ timeout: 1 })
      }
    }
    const publications = await sql<Array<{ name: string }>>`SELECT pubname::text AS name FROM pg_publication`
    for (const { name } of publications.filter((row) => row.name.startsWith(prefix))) {
      await sql`DROP PUBLICATION IF EXISTS ${sql(name)}`
    }
  } finally {
    await sql.end({ timeout: 1 })
  }
  if (problems.length > 0) throw new Error(`dropSlots(${prefix}): ${problems.join("; ")}`)
}

/**
 * What the server's replication slots cost before the tests start, as one line (undefined when there are none): an
 * interrupted earlier run's or another program's slot holds WAL on the disk the tests write to, and counts against
 * max_replication_slots, which the change-data-capture tests need. Inactive slots of the tests' own prefix (`prefix`)
 * are dropped first: no test of this run can be using them yet.
 */
export const slotsBeforeTests = async (url: string, prefix: string): Promise<string | undefined> => {
  const sql = connect(url)
  try {
    const dropped = await sql<Array<{ slot: string }>>`
      SELECT slot_name::text AS slot, pg_drop_replication_slot(slot_name) FROM pg_replication_slots
      WHERE NOT active AND database = current_database() AND starts_with(slot_name::text, ${prefix})`
    const [left] = await sql<Array<{ count: number; retained: string | null; max: string }>>`
      SELECT count(*)::int AS count, pg_size_pretty(sum(pg_wal_lsn_diff(pg_current_wal_lsn(), restart_lsn))) AS retained,
             current_setting('max_replication_slots') AS max
      FROM pg_replication_slots`
    const parts = [
      ...(dropped.length > 0 ? [`dropped ${dropped.length} slot(s) an earlier test run left (${dropped.map((row) => row.slot).join(", ")})`] : []),
      ...(left !== undefined && left.count > 0 ? [`${left.count} of ${left.max} slots in use, retaining ${left.retained ?? "0 bytes"} of WAL`] : [])
    ]
    return parts.length === 0 ? undefined : `Replication slots: ${parts.join("; ")}`
  } finally {
    await sql.end({ timeout: 1 })
  }
}
