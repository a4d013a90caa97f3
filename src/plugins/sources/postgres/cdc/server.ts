import * as Effect from "effect/Effect"
import type { ChangeRequest } from "../../../../core/plugin.js"
import { sourceError } from "../errors.js"
import { parseLsn } from "./positions.js"
import { attempt, type FeedSetup } from "./setup.js"
import { createPublication, dropSlot, publicationCovers, type QualifiedTable, readSlot, replicaIdentity, tableText } from "./slot.js"

/**
 * Before a replication stream opens: the server's settings, the publication (created when missing) and the slot,
 * checked against the stored positions of the exports reading it, and where the stream therefore starts.
 */

/** Where the stream starts, what the server must create first, and from where each member's changes are new. */
export interface Start {
  readonly slot: "exists" | "create"
  /** Where replication starts; undefined: the slot's own starting point (a slot being created: its consistent point). */
  readonly from: number | undefined
  /** Each member's published position (undefined: new with the slot, or the slot's confirmed position). */
  readonly froms: ReadonlyArray<number | undefined>
}

export const problem = (setup: FeedSetup, message: string, hint: string) => Effect.fail(sourceError(setup.context, message, { hint }))

/** `-e a -e b`, for a hint naming every export of a slot. */
const exportFlags = (requests: ReadonlyArray<ChangeRequest>) => requests.map((request) => `-e ${request.exportName}`).join(" ")

/**
 * Checks the server, the publication and the slot against the stored positions of the exports reading the slot
 * (`requests`: one, or several sharing it); creates the publication, for all their tables, if missing.
 */
export const prepareServer = (setup: FeedSetup, requests: ReadonlyArray<ChangeRequest>, tables: ReadonlyArray<QualifiedTable>) =>
  Effect.gen(function* () {
    const { slot: slotName, publication } = requests[0]!
    const reset = `\`rivet state reset ${exportFlags(requests)}\``
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
    const readerOf = new Map<string, string>()
    for (const [i, table] of tables.entries()) {
      const text = `${table.schema}.${table.name}`
      const earlier = readerOf.get(text)
      if (earlier !== undefined) {
        return yield* problem(
          setup,
          `exports '${earlier}' and '${requests[i]!.exportName}' both read table ${text} from replication slot ${slotName}`,
          "each export reading a shared slot needs its own table: give one of them its own cdc.slot"
        )
      }
      readerOf.set(text, requests[i]!.exportName)
    }
    let missing = false
    for (const table of tables) {
      const covers = yield* attempt(setup, "reading the publication", () => publicationCovers(setup.pool, publication, table))
      if (covers === "lacks") {
        return yield* problem(
          setup,
          `publication ${publication} does not include table ${table.schema}.${table.name}`,
          `add it (ALTER PUBLICATION ${publication} ADD TABLE ${table.schema}.${table.name}) or name another publication in cdc.publication`
        )
      }
      missing = covers === "missing"
      if (!missing) continue
      // A table published without a replica identity has its UPDATE and DELETE statements refused by PostgreSQL:
      // creating the publication would break the application's writes, not just this export.
      const identity = yield* attempt(setup, "reading the table's replica identity", () => replicaIdentity(setup.pool, table))
      if (identity === "n") {
        return yield* problem(
          setup,
          `table ${table.schema}.${table.name} has no replica identity (no primary key): publishing it for mode: cdc would make ` +
            "PostgreSQL refuse its UPDATE and DELETE statements, so the publication was not created",
          `give it a primary key, or run ALTER TABLE ${tableText(table)} REPLICA IDENTITY FULL, then run again ` +
            `(or create publication ${publication} yourself, e.g. WITH (publish = 'insert') for an insert-only table)`
        )
      }
    }
    if (missing) yield* attempt(setup, "creating the publication", () => createPublication(setup.pool, publication, tables))
    const slot = yield* attempt(setup, "reading the replication slot", () => readSlot(setup.pool, slotName))
    const confirmed = slot?.confirmed == null ? undefined : parseLsn(slot.confirmed)
    const froms: Array<number | undefined> = []
    for (const request of requests) {
      if (request.from === undefined) {
        froms.push(undefined)
        continue
      }
      const from = parseLsn(request.from)
      if (from === undefined) return yield* problem(setup, `the stored position '${request.from}' is not a PostgreSQL LSN`, `\`rivet state reset -e ${request.exportName}\` starts the export again`)
      if (slot === undefined) {
        return yield* problem(
          setup,
          `replication slot ${slotName} no longer exists: the changes after position ${request.from} cannot be read`,
          `${reset} starts again from a new snapshot (a slot dropped by hand, or invalidated by max_slot_wal_keep_size)`
        )
      }
      if (confirmed !== undefined && confirmed > from) {
        return yield* problem(
          setup,
          `replication slot ${slotName} was advanced to ${slot.confirmed}, past the published position ${request.from} of export '${request.exportName}': the changes in between are gone`,
          `${reset} starts again from a new snapshot; let only Rivet's exports of this config read the slot`
        )
      }
      froms.push(from)
    }
    const published = froms.filter((from): from is number => from !== undefined)
    let start: Start
    if (published.length > 0) {
      const late = requests.find((request, i) => froms[i] === undefined && request.snapshot)
      if (late !== undefined) {
        return yield* problem(
          setup,
          `export '${late.exportName}' has no published position, but replication slot ${slotName}, which it shares, has been read ` +
            "since: its snapshot cannot be taken consistently with the slot",
          `${reset} starts every export of the slot again from one snapshot, or give '${late.exportName}' its own cdc.slot`
        )
      }
      start = { slot: "exists", from: Math.min(...published), froms: froms.map((from) => from ?? confirmed) }
    } else if (slot !== undefined && !requests.some((request) => request.snapshot)) {
      start = { slot: "exists", from: confirmed, froms }
    } else {
      // No published position: a slot left by a first run that never published holds no snapshot any more.
      if (slot !== undefined) yield* attempt(setup, "dropping the unpublished slot", () => dropSlot(setup.pool, slotName))
      start = { slot: "create", from: undefined, froms }
    }
    return { start, serverVersion: Number(settings!["version"]) }
  })
