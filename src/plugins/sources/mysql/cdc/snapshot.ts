import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { type Batch, batchFromColumns, type BatchSchema } from "../../../../core/batch.js"
import { snapshotChangeColumns } from "../../../../core/columns/change-columns.js"
import type { SourceError } from "../../../../core/errors.js"
import type { RowFilter, SourceQuery } from "../../../../core/plugin.js"
import { type ErrorContext, fromMysql, sourceError } from "../errors.js"
import { openResult } from "../result.js"
import { queryText, type Session } from "../session.js"
import { type BinlogPosition, positionText } from "./position.js"

/**
 * Starts the snapshot a first run reads on `session` and returns the binary log position it is consistent with,
 * where the changes continue. MariaDB: `START TRANSACTION WITH CONSISTENT SNAPSHOT` and the transaction's own
 * `binlog_snapshot_file` / `binlog_snapshot_position` status, no lock. MySQL: the same transaction opened under a
 * moment's global read lock (`FLUSH TABLES WITH READ LOCK`, the RELOAD privilege), whose log position is read
 * before the lock is released, as mysqldump --single-transaction --source-data does.
 */
export const startSnapshot = (session: Session, context: ErrorContext): Effect.Effect<BinlogPosition, SourceError> =>
  Effect.tryPromise({
    try: async () => {
      const run = (sql: string) => queryText(session.connection, sql)
      await run("SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ")
      if (session.mariadb) {
        await run("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        const status = new Map((await run("SHOW STATUS LIKE 'binlog_snapshot_%'")).map(([name, value]) => [name?.toLowerCase(), value]))
        return { file: status.get("binlog_snapshot_file") ?? "", offset: Number(status.get("binlog_snapshot_position")) }
      }
      await run("FLUSH TABLES WITH READ LOCK")
      try {
        await run("START TRANSACTION WITH CONSISTENT SNAPSHOT, READ ONLY")
        const [row] = await run("SHOW MASTER STATUS").catch(() => run("SHOW BINARY LOG STATUS"))
        return { file: row?.[0] ?? "", offset: Number(row?.[1]) }
      } finally {
        await run("UNLOCK TABLES")
      }
    },
    catch: (cause) => fromMysql(cause, context, "starting the snapshot of the first run")
  }).pipe(
    Effect.filterOrFail(
      (position) => position.file !== "" && Number.isSafeInteger(position.offset) && position.offset > 0,
      () => sourceError(context, "the server gave no binary log position for the snapshot (is log_bin on?)")
    )
  )

/**
 * The table's rows on the snapshot started on `session`, in `pieces` one after the other (a MySQL snapshot is one
 * connection's), each batch behind its change columns: `snapshot`, the snapshot's position, the row's ordinal.
 */
export const snapshotRows = (
  session: Session,
  query: SourceQuery,
  pieces: ReadonlyArray<ReadonlyArray<RowFilter>>,
  schema: BatchSchema,
  position: BinlogPosition,
  zeroDatesAsNull: boolean,
  context: ErrorContext
): Stream.Stream<Batch, SourceError> =>
  Stream.suspend(() => {
    const text = Buffer.from(positionText(position), "latin1")
    let seq = 0
    const piece = (filters: ReadonlyArray<RowFilter>) =>
      Stream.unwrapScoped(
        Effect.map(
          openResult(() => Effect.succeed(session), { ...query, where: [...(query.where ?? []), ...filters] }, zeroDatesAsNull, context),
          (result) => result.batches
        )
      )
    return Stream.flatMap(Stream.fromIterable(pieces), piece).pipe(
      Stream.map((batch) => {
        const meta = snapshotChangeColumns(batch.rowCount, text, seq)
        seq += batch.rowCount
        return batchFromColumns(schema, [...meta, ...batch.columns])
      })
    )
  })
