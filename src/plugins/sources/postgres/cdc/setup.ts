import * as Effect from "effect/Effect"
import type postgres from "postgres"
import type { SourceError } from "../../../../core/errors.js"
import type { ChangeRequest, SourceQuery } from "../../../../core/plugin.js"
import type { ConnectionTarget } from "../../../../core/source/postgres-url.js"
import { type ErrorContext, fromPostgres } from "../errors.js"
import { planStatement } from "../result.js"
import { openSession, type SessionSettings } from "../session.js"
import { renderStatement } from "../statement.js"
import type { QualifiedTable } from "./slot.js"

/** What reading a change log needs of the driver, and the small steps every part of it takes. */

/** What the feed needs of the driver: its pool, where to connect, its session settings and error context. */
export interface FeedSetup {
  readonly pool: postgres.Sql
  readonly target: ConnectionTarget
  readonly applicationName: string
  readonly settings: SessionSettings
  readonly context: ErrorContext
}

export const qualified = (setup: FeedSetup, request: ChangeRequest): QualifiedTable => ({
  schema: request.table.schema ?? setup.settings.schema,
  name: request.table.name
})

export const tableQuery = (request: ChangeRequest, table: QualifiedTable): SourceQuery => ({
  exportName: request.exportName,
  base: { _tag: "Table", schema: table.schema, name: table.name },
  batchSize: request.batchSize,
  columnTypes: request.columnTypes
})

/** A promise of the driver, its failure worded as the source's error for `doing`. */
export const attempt = <A>(setup: FeedSetup, doing: string, run: () => Promise<A>): Effect.Effect<A, SourceError> =>
  Effect.tryPromise({ try: run, catch: (cause) => fromPostgres(cause, setup.context, doing) })

/** The table's columns as the batch reader plans them, from the catalog now. */
export const planTable = (setup: FeedSetup, query: SourceQuery) =>
  Effect.scoped(
    Effect.flatMap(openSession(setup.pool, setup.settings, setup.context), (connection) =>
      planStatement(connection, query, renderStatement(query), setup.context)
    )
  )


/** Waits out a walsender that still holds the slot (a run that ended a moment ago): SQLSTATE 55006, a few seconds. */
export const whileSlotBusy = async <A>(run: () => Promise<A>): Promise<A> => {
  for (let attempt = 0; ; attempt++) {
    try {
      return await run()
    } catch (cause) {
      if ((cause as { code?: string }).code !== "55006" || attempt >= 100) throw cause
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  }
}
