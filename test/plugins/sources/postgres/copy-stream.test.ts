import * as Cause from "effect/Cause"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import postgres from "postgres"
import { afterAll, describe, expect, it } from "vitest"
import { copyFailure, copyOut, startCopyOut } from "../../../../src/plugins/sources/postgres/copy-stream.js"
import { openSession } from "../../../../src/plugins/sources/postgres/session.js"
import { testPgUrl } from "../../../support/pg.js"
import { adminSql } from "./support.js"

// The COPY reader over postgres.js 3.4.9's `.readable()`, against the real server: the two hazards of that stream
// (copy-stream.ts) and the cleanup paths an export relies on.
const admin = adminSql()
const pool = postgres(testPgUrl(), {
  max: 2,
  fetch_types: false,
  prepare: false,
  onnotice: () => {},
  connection: { application_name: "rivet_copy_stream" }
})
afterAll(async () => {
  await pool.end({ timeout: 0 })
  await admin.end()
})

const context = { displayUrl: "postgres://postgres@127.0.0.1/test", scrub: (text: string) => text, exportName: "copy" }
const settings = { statementTimeoutMs: 0, lockTimeoutMs: 0, schema: "public" }

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

const failureOf = <A, E>(exit: Exit.Exit<A, E>): E | undefined =>
  Exit.isFailure(exit) ? Option.getOrUndefined(Cause.failureOption(exit.cause)) : undefined

describe("copy-stream", () => {
  it("delivers every byte of a COPY in order", async () => {
    const received: Array<Uint8Array> = []
    const result = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const copy = yield* copyOut(sql, "COPY (SELECT i FROM generate_series(1, 50000) AS i) TO STDOUT", (bytes, start, end) => {
            received.push(bytes.slice(start, end))
          }, context)
          yield* Effect.promise(() => copy.done)
          // The transaction is still usable after the COPY.
          return yield* Effect.promise(() => sql.unsafe("SELECT 42 AS answer"))
        })
      )
    )
    const text = Buffer.concat(received).toString("utf8")
    expect(text.split("\n").length).toBe(50001)
    expect(text.startsWith("1\n2\n")).toBe(true)
    expect(text.endsWith("49999\n50000\n")).toBe(true)
    expect(result[0]?.answer).toBe(42)
  })

  it("a COPY failing on its first row is reported, never an unhandled 'error' event (hazard 1)", { timeout: 15000 }, async () => {
    // Division by zero on the first row: the ErrorResponse follows the CopyOutResponse in the same socket read.
    for (let round = 0; round < 20; round++) {
      const exit = await Effect.runPromiseExit(
        Effect.scoped(
          Effect.gen(function* () {
            const sql = yield* openSession(pool, settings, context)
            const copy = yield* copyOut(sql, "COPY (SELECT 1 / (i - i) FROM generate_series(1, 3) AS i) TO STDOUT", () => {}, context)
            return yield* Effect.tryPromise({ try: () => copy.done, catch: (cause) => String(cause) })
          })
        )
      )
      const error = failureOf(exit)
      expect(typeof error === "string" ? error : error?.message).toContain("division by zero")
    }
  })

  it("a consumer that paused at the very end still frees the connection (hazard 2)", { timeout: 15000 }, async () => {
    const result = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const holder: { copy?: { pause: () => void } } = {}
          let chunks = 0
          // Pausing after every chunk makes `push` return false for the last CopyData too: the socket is paused
          // when CopyDone arrives.
          const copy = yield* copyOut(sql, "COPY (SELECT repeat('x', 5000) FROM generate_series(1, 400)) TO STDOUT", () => {
            chunks++
            holder.copy?.pause()
          }, context)
          holder.copy = copy
          const resumer = setInterval(() => copy.resume(), 1)
          yield* Effect.promise(() => copy.done)
          clearInterval(resumer)
          const answer = yield* Effect.promise(() => sql.unsafe("SELECT 7 AS n"))
          return { chunks, answer: answer[0]?.n }
        })
      )
    )
    expect(result.chunks).toBe(400)
    expect(result.answer).toBe(7)
  })

  it("closing the scope mid-stream cancels the COPY on the server and returns the connection (hazard 3)", { timeout: 15000 }, async () => {
    let pid = 0
    let chunks = 0
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          pid = (yield* Effect.promise(() => sql.unsafe<Array<{ pid: number }>>("SELECT pg_backend_pid() AS pid")))[0]!.pid
          const copy = yield* copyOut(sql, "COPY (SELECT i, pg_sleep(0.001) FROM generate_series(1, 1000000) AS i) TO STDOUT", () => {
            chunks++
          }, context)
          copy.pause()
          yield* Effect.sleep("300 millis")
        })
      )
    )
    const activity = await admin`SELECT state, query FROM pg_stat_activity WHERE pid = ${pid}`
    expect(activity[0]?.state).toBe("idle")
    expect(chunks).toBeLessThan(1000000)
    // The pool hands the same connection out again and it works.
    const [row] = await pool`SELECT 1 AS one`
    expect(row?.one).toBe(1)
  })

  it("the pool's canceller, which cancelling awaits, settles once the server took the request (hazard 4)", { timeout: 15000 }, async () => {
    // postgres.js' query.cancel() returns null; copy-stream awaits the promise of the pool's canceller instead.
    const query = pool.unsafe("SELECT pg_sleep(5)")
    const outcome = query.then(
      () => "finished",
      (error: { code?: string }) => error.code
    )
    await sleep(200)
    const { canceller } = query as unknown as { canceller?: (query: unknown) => unknown }
    const request = canceller?.(query)
    expect(request).toBeInstanceOf(Promise)
    await request
    expect(await outcome).toBe("57014")
  })

  it("closing the scope while the COPY has not answered yet cancels it", { timeout: 15000 }, async () => {
    const started = Date.now()
    const fiber = Effect.runFork(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          yield* copyOut(sql, "COPY (SELECT pg_sleep(30)) TO STDOUT", () => {}, context)
        })
      )
    )
    await sleep(300)
    await Effect.runPromise(Fiber.interrupt(fiber))
    expect(Date.now() - started).toBeLessThan(5000)
    const running = await admin`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'COPY (SELECT pg_sleep(30))%' AND state = 'active'`
    expect(running[0]?.n).toBe(0)
  })

  it("a backend terminated mid-stream fails as a retryable 'connection closed'", async () => {
    const pool = postgres(testPgUrl(), { max: 1, fetch_types: false, prepare: false, onnotice: () => {} })
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const [row] = yield* Effect.promise(() => sql.unsafe<Array<{ pid: number }>>("SELECT pg_backend_pid() AS pid"))
          let seen = 0
          const copy = yield* copyOut(sql, "COPY (SELECT i, pg_sleep(0.0005) FROM generate_series(1, 1000000) AS i) TO STDOUT", () => {
            if (++seen === 100) void admin`SELECT pg_terminate_backend(${row!.pid})`.then(() => undefined)
          }, context)
          return yield* Effect.tryPromise({ try: () => copy.done, catch: (cause) => copyFailure(cause, context, "reading rows") })
        })
      )
    )
    await pool.end({ timeout: 0 })
    const error = failureOf(exit)
    expect(error?.retryable).toBe(true)
    expect(error?.message).toContain("closed while reading rows")
  })

  it("startCopyOut rejects `started` for a statement the server refuses", async () => {
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const copy = startCopyOut(sql, "COPY (SELECT nope FROM nowhere) TO STDOUT", () => {})
          const outcome = yield* Effect.promise(() => copy.started.then(() => "started", (cause: unknown) => String(cause)))
          expect(outcome).toContain("nowhere")
          yield* Effect.promise(copy.cancel)
        })
      )
    )
  })
})

