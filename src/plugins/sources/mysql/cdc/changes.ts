import * as Effect from "effect/Effect"
import { formatBytes } from "../../../../core/size.js"
import type { ChangeLogStatus, ChangeRequest, SourceChanges } from "../../../../core/plugin.js"
import { contextOf, type FeedSetup, MYSQL_CHANGE_COLUMNS, openControl, openFeed, planChanges, tableQuery } from "./feed.js"
import { type BinlogPosition, parsePosition, positionText } from "./position.js"
import { binlogFiles, currentPosition, LOG_BIN_HINT, readServer } from "./server.js"

type Check = ChangeLogStatus["checks"][number]

/** How far `from` is behind `current`, in words. */
const lag = (from: BinlogPosition, current: BinlogPosition, files: ReadonlyArray<string>): string => {
  if (from.file === current.file) return `${formatBytes(current.offset - from.offset)} of binary log behind the server`
  const between = files.indexOf(current.file) - files.indexOf(from.file)
  return `${between} binary log file(s) behind the server (${from.file} → ${current.file})`
}

/** Server settings, rights, the server id and the table, for `rivet doctor` and `rivet plan`. */
const inspect = (setup: FeedSetup, request: ChangeRequest) =>
  Effect.scoped(
    Effect.gen(function* () {
      const context = contextOf(setup, request)
      const session = yield* openControl(setup, context)
      const server = yield* readServer(session, context)
      const current = server.logBin ? yield* Effect.option(currentPosition(session, context)) : undefined
      const planned = yield* Effect.either(planChanges(session, tableQuery(setup, request), context))
      const from = request.from === undefined ? undefined : parsePosition(request.from)
      const files = from === undefined || !server.logBin ? [] : yield* binlogFiles(session, context)
      const id = request.serverId
      const checks: Array<Check> = [
        { name: "log_bin", ok: server.logBin, detail: server.logBin ? "ON" : "OFF: the server writes no binary log", hint: LOG_BIN_HINT },
        { name: "binlog_format", ok: server.format === "ROW", detail: server.format, hint: "SET GLOBAL binlog_format = ROW (and in my.cnf)" },
        { name: "binlog_row_image", ok: server.rowImage === "FULL", detail: server.rowImage, hint: "SET GLOBAL binlog_row_image = FULL (and in my.cnf)" },
        {
          name: "binlog_row_metadata",
          ok: server.rowMetadata === "" || server.rowMetadata === "FULL",
          detail: server.rowMetadata === "" ? "not a setting of this server" : server.rowMetadata,
          hint: "SET GLOBAL binlog_row_metadata = FULL (and in my.cnf): the log then names each change's columns, so a change of the table's definition is read exactly"
        },
        {
          name: "replication privileges",
          ok: server.mayReplicate && server.mayReadStatus,
          detail: server.mayReplicate && server.mayReadStatus ? "the user may read the binary log and its status" : `the user lacks ${[server.mayReplicate ? "" : "REPLICATION SLAVE", server.mayReadStatus ? "" : "REPLICATION CLIENT (MariaDB: BINLOG MONITOR)"].filter(Boolean).join(" and ")}`,
          hint: "GRANT REPLICATION SLAVE, REPLICATION CLIENT, SELECT ON *.* TO <user> (MariaDB 10.5+: BINLOG MONITOR for REPLICATION CLIENT; MySQL's first-run snapshot also needs RELOAD)"
        },
        {
          name: "server_id",
          ok: id !== undefined && id !== server.serverId && !server.replicaIds.includes(id),
          detail:
            id === undefined
              ? "cdc.server_id is not set"
              : id === server.serverId
                ? `${id} is the server's own server_id`
                : server.replicaIds.includes(id)
                  ? `${id} is the server_id of a replica registered with the server`
                  : `${id} (the server's is ${server.serverId}; registered replicas: ${server.replicaIds.join(", ") || "none"})`,
          hint: "set cdc.server_id to a number no replica of the server and no other export uses"
        },
        planned._tag === "Left"
          ? { name: "columns", ok: false, detail: planned.left.message, hint: planned.left.hint }
          : { name: "columns", ok: true, detail: `${planned.right.schema.columns.length - MYSQL_CHANGE_COLUMNS.length} table column(s) after the ${MYSQL_CHANGE_COLUMNS.length} change columns` }
      ]
      const now = current === undefined ? undefined : current._tag === "Some" ? current.value : undefined
      if (from !== undefined && now !== undefined) {
        const kept = files.includes(from.file)
        checks.push({
          name: "published position",
          ok: kept,
          detail: kept ? `${positionText(from)}: ${lag(from, now, files)}` : `${positionText(from)} is no longer in the server's binary log (purged)`,
          hint: `rivet state reset -e ${request.exportName} starts the export again from a new snapshot`
        })
      }
      return {
        checks,
        current: now === undefined ? undefined : positionText(now),
        positionOnServer: false,
        schema: planned._tag === "Right" ? planned.right.schema : undefined
      } satisfies ChangeLogStatus
    })
  )

/**
 * Change data capture from the binary log. Nothing is confirmed to the server: a replica holds no position there, and
 * the server keeps its binary logs by its own expiry (binlog_expire_logs_seconds), not by what readers have read;
 * the published position lives in Rivet's state alone, and there is nothing on the server to drop.
 */
export const mysqlChanges = (setup: FeedSetup): SourceChanges => ({
  open: (request) => openFeed(setup, request).pipe(Effect.withSpan("MysqlSource.changes.open")),
  confirm: () => Effect.void,
  inspect: (request) => inspect(setup, request).pipe(Effect.withSpan("MysqlSource.changes.inspect")),
  drop: () => Effect.succeed(false)
})
