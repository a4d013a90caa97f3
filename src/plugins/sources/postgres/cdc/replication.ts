import type { Duplex } from "node:stream"
import postgres from "postgres"
import type { ConnectionTarget } from "../../../../core/source/postgres-url.js"
import { quoteIdent, quoteLiteral } from "../statement.js"
import { formatLsn } from "./positions.js"

/**
 * A walsender connection (postgres.js with `replication: 'database'`): replication commands go over the simple
 * query protocol, `START_REPLICATION` answers with a CopyBoth stream whose `data` chunks are one CopyData message
 * each. Nothing is sent to the server on our behalf: standby status updates (what the slot may release) are ours.
 */

/** The session settings the walsender renders text values with (text mode), as the batch reader sets them. */
const SESSION = {
  TimeZone: "UTC",
  DateStyle: "ISO",
  IntervalStyle: "iso_8601",
  extra_float_digits: 3,
  bytea_output: "hex"
}

export const openReplicationConnection = (target: ConnectionTarget, applicationName: string): postgres.Sql =>
  postgres(target.settingsUrl, {
    ...target.options,
    max: 1,
    prepare: false,
    fetch_types: false,
    idle_timeout: 0,
    onnotice: () => {},
    // postgres.js' types do not list `replication`; it is sent as a startup parameter like the others.
    connection: { ...SESSION, application_name: applicationName, replication: "database" } as Record<string, string | number>
  })

export interface CreatedSlot {
  /** Where the slot's changes begin: the first change after the exported snapshot. */
  readonly consistentPoint: string
  /** The exported snapshot's name, while this connection stays idle; undefined when none was asked for. */
  readonly snapshotName: string | undefined
}

/** Creates a permanent pgoutput slot; with `exportSnapshot`, its snapshot lives until the connection's next command. */
export const createSlot = async (repl: postgres.Sql, slot: string, exportSnapshot: boolean): Promise<CreatedSlot> => {
  const [row] = await repl.unsafe(
    `CREATE_REPLICATION_SLOT ${quoteIdent(slot)} LOGICAL pgoutput (SNAPSHOT '${exportSnapshot ? "export" : "nothing"}')`
  )
  const snapshot = row?.["snapshot_name"]
  return {
    consistentPoint: String(row!["consistent_point"]),
    snapshotName: typeof snapshot === "string" && snapshot !== "" ? snapshot : undefined
  }
}

export interface Replication {
  /** CopyBoth: one `data` chunk per CopyData message; writes are CopyData to the server. */
  readonly stream: Duplex
  /** Settles with the command's failure (a terminated walsender, the connection's end), or undefined. */
  readonly ended: Promise<unknown>
}

/** Starts streaming the slot's changes after `start` (0: from the slot's confirmed position). */
export const startReplication = async (
  repl: postgres.Sql,
  slot: string,
  start: number,
  publication: string,
  binary: boolean
): Promise<Replication> => {
  const options = [`proto_version '1'`, `publication_names ${quoteLiteral(quoteIdent(publication))}`]
  if (binary) options.push(`binary 'true'`)
  const query = repl.unsafe(`START_REPLICATION SLOT ${quoteIdent(slot)} LOGICAL ${formatLsn(start)} (${options.join(", ")})`)
  const stream = query.writable()
  // The command's own promise settles when the stream ends; handled here so that ending the connection under it
  // (the normal way out) is not an unhandled rejection.
  const ended = query.then(
    () => undefined,
    (cause: unknown) => cause
  )
  return { stream: (await stream) as unknown as Duplex, ended }
}

const EPOCH_2000_MS = Date.UTC(2000, 0, 1)

/**
 * A standby status update: written, flushed and applied all at `confirmed` — the published position, never beyond
 * (the slot may release WAL before it). `replyRequested` asks the server for a keepalive carrying how far it has
 * sent.
 */
export const statusUpdate = (confirmed: number, replyRequested: boolean, now = Date.now()): Buffer => {
  const message = Buffer.alloc(34)
  message[0] = 0x72 // 'r'
  for (const at of [1, 9, 17]) {
    message.writeUInt32BE(Math.floor(confirmed / 2 ** 32), at)
    message.writeUInt32BE(confirmed % 2 ** 32, at + 4)
  }
  message.writeBigInt64BE(BigInt(now - EPOCH_2000_MS) * 1000n, 25)
  message[33] = replyRequested ? 1 : 0
  return message
}
