import * as Effect from "effect/Effect"
import type { SourceError } from "../../../../core/errors.js"
import { type ErrorContext, fromMysql, sourceError } from "../errors.js"
import { queryText, runOn, type Session } from "../session.js"
import { type BinlogPosition, positionText } from "./position.js"

/** What the binary log reader needs of the server, as the server reports it. */
export interface BinlogServer {
  readonly logBin: boolean
  readonly format: string
  readonly rowImage: string
  /** `FULL` makes every table map carry the column names (MySQL 8.0.1+, MariaDB 10.5+); "" where the server has no such setting. */
  readonly rowMetadata: string
  readonly serverId: number
  /** Server ids of the replicas registered with the server (`SHOW SLAVE HOSTS`). */
  readonly replicaIds: ReadonlyArray<number>
  /** The user's grants allow reading the binary log (REPLICATION SLAVE) and its status (REPLICATION CLIENT / BINLOG MONITOR). */
  readonly mayReplicate: boolean
  readonly mayReadStatus: boolean
}

const row = async (session: Session, sql: string) => (await queryText(session.connection, sql))[0] ?? []

/** A statement that may not exist on this server (an older or newer version): its rows, or undefined. */
const optional = (session: Session, sql: string) => queryText(session.connection, sql).catch(() => undefined)

const granted = (grants: ReadonlyArray<string>, privilege: string) =>
  grants.some((grant) => grant.includes("ALL PRIVILEGES ON *.*") || new RegExp(`\\b${privilege}\\b.* ON \\*\\.\\*`).test(grant))

export const readServer = (session: Session, context: ErrorContext): Effect.Effect<BinlogServer, SourceError> =>
  Effect.tryPromise({
    try: async () => {
      const [logBin, format, rowImage, serverId] = await row(
        session,
        "SELECT @@GLOBAL.log_bin, @@GLOBAL.binlog_format, @@GLOBAL.binlog_row_image, @@GLOBAL.server_id"
      )
      const metadata = await optional(session, "SELECT @@GLOBAL.binlog_row_metadata")
      const hosts = (await optional(session, "SHOW SLAVE HOSTS")) ?? []
      const grants = (await queryText(session.connection, "SHOW GRANTS")).map(([grant]) => grant ?? "")
      return {
        logBin: logBin === "1" || logBin === "ON",
        format: format ?? "",
        rowImage: rowImage ?? "",
        rowMetadata: metadata?.[0]?.[0] ?? "",
        serverId: Number(serverId),
        replicaIds: hosts.map((host) => Number(host[0])),
        mayReplicate: granted(grants, "REPLICATION SLAVE"),
        mayReadStatus: granted(grants, "REPLICATION CLIENT") || granted(grants, "BINLOG MONITOR") || granted(grants, "SUPER")
      }
    },
    catch: (cause) => fromMysql(cause, context, "reading the binary log settings")
  })

/** The end of the binary log now: where a change committed after this call will be. */
export const currentPosition = (session: Session, context: ErrorContext): Effect.Effect<BinlogPosition, SourceError> =>
  Effect.flatMap(
    Effect.tryPromise({
      try: async () => (await optional(session, "SHOW MASTER STATUS")) ?? (await queryText(session.connection, "SHOW BINARY LOG STATUS")),
      catch: (cause) => fromMysql(cause, context, "reading the binary log position")
    }),
    (rows) => {
      const [file, offset] = rows[0] ?? []
      return file === undefined || file === null
        ? Effect.fail(sourceError(context, "the server writes no binary log (SHOW MASTER STATUS is empty)", { hint: LOG_BIN_HINT }))
        : Effect.succeed({ file, offset: Number(offset) })
    }
  )

/** The binary log files the server still has, oldest first. */
export const binlogFiles = (session: Session, context: ErrorContext): Effect.Effect<ReadonlyArray<string>, SourceError> =>
  Effect.map(runOn(session, context, "listing the binary logs", "SHOW BINARY LOGS"), (rows) => rows.map(([file]) => file ?? ""))

export const LOG_BIN_HINT =
  "start the server with log_bin, binlog_format=ROW, binlog_row_image=FULL and a server_id (binlog_row_metadata=FULL where the server has it), e.g. in my.cnf: [mysqld] log_bin=binlog server_id=1 binlog_format=ROW binlog_row_image=FULL binlog_row_metadata=FULL"

/**
 * The published position must still be on the server: a binary log purged past it (PURGE BINARY LOGS,
 * binlog_expire_logs_seconds) has lost changes the export never read, which no run can recover.
 */
export const checkNotPurged = (
  session: Session,
  context: ErrorContext,
  exportName: string,
  from: BinlogPosition
): Effect.Effect<void, SourceError> =>
  Effect.flatMap(binlogFiles(session, context), (files) => {
    const oldest = files[0]
    if (files.includes(from.file)) return Effect.void
    return Effect.fail(
      sourceError(
        context,
        `the published position ${positionText(from)} is no longer in the server's binary log (its oldest file is ${oldest ?? "none"}): the changes between it and the oldest file were purged and cannot be read`,
        {
          hint: `start the export again from a new snapshot: rivet state reset -c <config> -e ${exportName}, then rivet run (keep binary logs longer with binlog_expire_logs_seconds, or run the export more often)`
        }
      )
    )
  })
