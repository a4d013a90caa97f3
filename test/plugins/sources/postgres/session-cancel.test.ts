import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, expect, it } from "vitest"
import { cancelRunning, openSession } from "../../../../src/plugins/sources/postgres/session.js"
import { testPgUrl } from "../../../support/pg.js"

// A transaction ending after a failure cancels its running statement and sends its end only once the server took
// the cancel request: a request still on its way would cancel the connection's next statement (another export's).
const pool = postgres(testPgUrl(), { max: 1, fetch_types: false, prepare: false, onnotice: () => {} })
afterAll(() => pool.end({ timeout: 0 }))

const context = { displayUrl: "postgres://postgres@127.0.0.1/test", scrub: (text: string) => text, exportName: "cancel" }
const settings = { statementTimeoutMs: 0, lockTimeoutMs: 0, schema: "public" }

it("cancelRunning resolves once the server took the cancel request of the running statement", { timeout: 15_000 }, async () => {
  const code = await Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* openSession(pool, settings, context)
        const outcome = sql.unsafe("SELECT pg_sleep(10)").then(
          () => "finished",
          (error: { code?: string }) => error.code
        )
        yield* Effect.sleep("200 millis")
        const cancelled = cancelRunning(sql)
        expect(cancelled).toBeInstanceOf(Promise)
        yield* Effect.promise(() => cancelled)
        return yield* Effect.promise(() => outcome)
      })
    )
  )
  expect(code).toBe("57014")
})

it("the pool's one connection runs the next statement after a failed scope cancelled its statement", { timeout: 15_000 }, async () => {
  const started = Date.now()
  const failed = await Effect.runPromiseExit(
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* openSession(pool, settings, context)
        void sql.unsafe("SELECT pg_sleep(10)").catch(() => undefined)
        yield* Effect.sleep("200 millis")
        return yield* Effect.fail("a failure elsewhere in the export")
      })
    )
  )
  expect(failed._tag).toBe("Failure")
  // The next statement on the same (only) connection is not hit by a late cancel request.
  const rows = await pool`SELECT pg_sleep(0.3), 1 AS one`
  expect(rows[0]?.["one"]).toBe(1)
  expect(Date.now() - started).toBeLessThan(5_000)
})
