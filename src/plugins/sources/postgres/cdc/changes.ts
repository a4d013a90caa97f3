import * as Effect from "effect/Effect"
import type { ChangeLogStatus, ChangeRequest, SourceChanges } from "../../../../core/plugin.js"
import { CHANGE_COLUMNS, changeSchema } from "./change-columns.js"
import { openFeed } from "./feed.js"
import { attempt, type FeedSetup, planTable, qualified, tableQuery, whileSlotBusy } from "./setup.js"
import { parseLsn, positionText } from "./positions.js"
import { openReplicationConnection, startReplication, statusUpdate } from "./replication.js"
import { currentPosition, dropSlot, publicationCovers, readSlot, replicaIdentity } from "./slot.js"

/** How long `confirm` waits for the server to show the confirmed position. */
const CONFIRM_WAIT_MS = 5_000

/**
 * Confirms `position` to the slot the way a replica does: a short replication session started at it, one standby
 * status update, then the wait until `pg_replication_slots` shows it. (`pg_replication_slot_advance` would decode
 * the WAL once more on the server.)
 */
const confirm = (setup: FeedSetup, request: ChangeRequest, position: string) =>
  attempt(setup, `confirming position ${position} to replication slot ${request.slot}`, async () => {
    const lsn = parseLsn(position)!
    const slot = await readSlot(setup.pool, request.slot)
    if (slot === undefined || (slot.confirmed !== null && parseLsn(slot.confirmed)! >= lsn)) return
    const repl = openReplicationConnection(setup.target, setup.applicationName)
    try {
      const { stream } = await whileSlotBusy(() => startReplication(repl, request.slot, lsn, request.publication, false))
      // Only the status update matters here: what the server sends meanwhile (and its end) is ignored.
      stream.on("data", () => {})
      stream.on("error", () => {})
      stream.write(statusUpdate(lsn, false))
      const deadline = Date.now() + CONFIRM_WAIT_MS
      for (;;) {
        const now = await readSlot(setup.pool, request.slot)
        if (now?.confirmed != null && parseLsn(now.confirmed)! >= lsn) return
        if (Date.now() > deadline) throw new Error(`the slot still shows ${now?.confirmed ?? "no position"} after ${CONFIRM_WAIT_MS / 1000} s`)
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    } finally {
      await repl.end({ timeout: 0 }).catch(() => undefined)
    }
  })

/** Server settings, rights, the table and the slot, for `rivet doctor` and `rivet plan`. */
const inspect = (setup: FeedSetup, request: ChangeRequest) =>
  Effect.gen(function* () {
    const table = qualified(setup, request)
    const [server] = yield* attempt(setup, "reading server settings", () =>
      setup.pool.unsafe(
        `SELECT current_setting('wal_level') AS wal_level,
           current_setting('max_replication_slots')::int AS max_slots,
           (SELECT count(*) FROM pg_catalog.pg_replication_slots)::int AS slots,
           (SELECT rolsuper OR rolreplication FROM pg_catalog.pg_roles WHERE rolname = current_user) AS may_replicate`
      )
    )
    const walLevel = String(server!["wal_level"])
    const maxSlots = Number(server!["max_slots"])
    const slots = Number(server!["slots"])
    const mayReplicate = ["true", "t", true].includes(server!["may_replicate"] as string | boolean)
    const identity = yield* attempt(setup, "reading the table's replica identity", () => replicaIdentity(setup.pool, table))
    const publication = yield* attempt(setup, "reading the publication", () => publicationCovers(setup.pool, request.publication, table))
    const slot = yield* attempt(setup, "reading the replication slot", () => readSlot(setup.pool, request.slot))
    const current = yield* attempt(setup, "reading the WAL position", () => currentPosition(setup.pool))
    // The columns as a feed opened now plans them: a column it cannot read, or named like a change column, fails here.
    const planned = identity === undefined ? undefined : yield* Effect.either(planTable(setup, tableQuery(request, table)))
    const changes = planned?._tag === "Right" ? changeSchema(planned.right.schema.columns) : undefined
    const checks: Array<ChangeLogStatus["checks"][number]> = [
      {
        name: "wal_level",
        ok: walLevel === "logical",
        detail: walLevel,
        hint: "ALTER SYSTEM SET wal_level = logical, then restart PostgreSQL"
      },
      {
        name: "replication privilege",
        ok: mayReplicate,
        detail: mayReplicate ? "the user may replicate" : "the user has neither REPLICATION nor SUPERUSER",
        hint: "ALTER ROLE <user> REPLICATION (and GRANT SELECT on the table)"
      },
      {
        name: "replication slots",
        ok: slot !== undefined || slots < maxSlots,
        detail: `${slots} of max_replication_slots = ${maxSlots} in use`,
        hint: "raise max_replication_slots (restart), or drop slots no longer read"
      },
      {
        name: "replica identity",
        ok: identity !== undefined && identity !== "n",
        detail:
          identity === undefined
            ? `table ${table.schema}.${table.name} not found`
            : { d: "DEFAULT (primary key)", f: "FULL", i: "USING INDEX", n: "none (no primary key): PostgreSQL refuses UPDATE and DELETE on such a table once it is published" }[identity] ?? identity,
        hint: `ALTER TABLE ${table.schema}.${table.name} REPLICA IDENTITY FULL, or give it a primary key`
      },
      {
        name: "publication",
        ok: publication !== "lacks",
        detail:
          publication === "missing"
            ? `${request.publication} does not exist yet (the first run creates it)`
            : publication === "covers"
              ? `${request.publication} includes the table`
              : `${request.publication} does not include the table`,
        hint: `ALTER PUBLICATION ${request.publication} ADD TABLE ${table.schema}.${table.name}`
      },
      ...(planned === undefined
        ? []
        : [
            planned._tag === "Left"
              ? { name: "columns", ok: false, detail: planned.left.message, hint: planned.left.hint }
              : changes !== undefined && "problem" in changes
                ? { name: "columns", ok: false, detail: changes.problem.reason, hint: changes.problem.fix }
                : { name: "columns", ok: true, detail: `${planned.right.schema.columns.length} table column(s) after the ${CHANGE_COLUMNS.length} change columns` }
          ])
    ]
    return {
      checks,
      slot:
        slot === undefined
          ? undefined
          : {
              name: request.slot,
              active: slot.active,
              confirmed: slot.confirmed === null ? undefined : positionText(parseLsn(slot.confirmed)!),
              retainedBytes: slot.retainedBytes ?? undefined
            },
      current: positionText(parseLsn(current)!),
      schema: changes !== undefined && "schema" in changes ? changes.schema : undefined
    } satisfies ChangeLogStatus
  })

/** `sharedOpen`: the driver's open for exports sharing a slot (shared.ts). */
export const postgresChanges = (setup: FeedSetup, sharedOpen: SourceChanges["open"]): SourceChanges => ({
  open: (request) =>
    ((request.readers?.length ?? 1) > 1 ? sharedOpen(request) : openFeed(setup, request)).pipe(Effect.withSpan("PostgresSource.changes.open")),
  confirm: (request, position) => confirm(setup, request, position).pipe(Effect.withSpan("PostgresSource.changes.confirm")),
  inspect: (request) => inspect(setup, request).pipe(Effect.withSpan("PostgresSource.changes.inspect")),
  drop: (request) => attempt(setup, `dropping replication slot ${request.slot}`, () => dropSlot(setup.pool, request.slot))
})
