import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Option from "effect/Option"
import postgres from "postgres"
import { afterAll, expect, it } from "vitest"
import { attemptOn, openSession } from "../../../../src/plugins/sources/postgres/session.js"
import { testPgUrl } from "../../../support/pg.js"
import { adminSql } from "./support.js"

// postgres.js may leave a query unsettled when its connection is terminated at the wrong moment (while the statement
// is described). Whatever the driver does, a query on an export's transaction must end once the connection is gone.
const admin = adminSql()
afterAll(() => admin.end())

const context = { displayUrl: "postgres://postgres@127.0.0.1/test", scrub: (text: string) => text, exportName: "lost" }
const settings = { statementTimeoutMs: 0, lockTimeoutMs: 0, schema: "public" }

it("a query the driver never settles fails as a retryable 'connection closed' once the backend is terminated", async () => {
  const pool = postgres(testPgUrl(), { max: 1, fetch_types: false, prepare: false, onnotice: () => {}, connection: { application_name: "rivet_session_lost" } })
  try {
    const started = Date.now()
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const [row] = yield* attemptOn(sql, context, "reading the backend pid", () => sql.unsafe<Array<{ pid: number }>>("SELECT pg_backend_pid() AS pid"))
          // A postgres.js query runs only once awaited (or then-ed).
          setTimeout(() => void admin`SELECT pg_terminate_backend(${row!.pid})`.then(() => undefined), 200)
          // Stands for the unsettled describe: a promise nothing will ever resolve.
          return yield* attemptOn(sql, context, "preparing the query", () => new Promise<never>(() => {}))
        })
      )
    )
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined
    expect(error?._tag).toBe("SourceError")
    expect(error?.retryable).toBe(true)
    expect(error?.message).toContain("was closed while preparing the query")
    expect(Date.now() - started).toBeLessThan(5000)
  } finally {
    await pool.end({ timeout: 0 })
  }
})
