import { createHash } from "node:crypto"
import * as net from "node:net"
import { Readable } from "node:stream"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CopyOut, copyFailure, copyOut } from "../../../../src/plugins/sources/postgres/copy-stream.js"
import { tapCopy } from "../../../../src/plugins/sources/postgres/copy-tap.js"
import { openSession } from "../../../../src/plugins/sources/postgres/session.js"
import { testPgUrl } from "../../../support/pg.js"
import { choppingProxy } from "./chopping-proxy.js"
import { adminSql, plainSettings, sessionContext } from "./support.js"

// copy-tap.ts against a plain postgres.js stream (no tap) on the same statements: row sizes around socket-read and
// 64 KiB boundaries, a 5 MiB value, pauses on a fixed schedule (each way of resuming, and one at the hand-over to the
// socket, asserted to have happened), and the ways a COPY ends early while read off the socket.
const admin = adminSql()
const pool = postgres(testPgUrl(), { max: 1, fetch_types: false, prepare: false, onnotice: () => {} })
beforeAll(async () => {
  await admin.unsafe(
    `CREATE OR REPLACE FUNCTION rivet_tap_edge(i int) RETURNS int LANGUAGE plpgsql AS $$
     BEGIN IF i % 300 = 0 THEN RAISE NOTICE 'row % %', i, repeat('n', i % 97); END IF; RETURN 1 / (i - 4000) * 0 + i; END $$`
  )
})
afterAll(async () => {
  await admin.unsafe("DROP FUNCTION IF EXISTS rivet_tap_edge(int)")
  await pool.end({ timeout: 0 })
  await admin.end()
})

const context = sessionContext("tap")
const settings = plainSettings

/** The COPY's bytes through postgres.js' own stream, untouched (on a connection of its own: that stream can leave
 * its socket paused after the end, see copy-stream.ts, hazard 2). */
const reference = async (statement: string): Promise<string> => {
  const plain = postgres(testPgUrl(), { max: 1, onnotice: () => {} })
  const hash = createHash("sha256")
  const stream = (await plain.unsafe(statement).readable()) as Readable
  for await (const chunk of stream) hash.update(chunk as Buffer)
  await plain.end({ timeout: 0 })
  return hash.digest("hex")
}

interface Tapped {
  readonly hash: string
  readonly direct: boolean
  readonly failure: unknown
  readonly after: unknown
  /** Pauses made, by how the reader resumed, and how many of them while the tap read off the socket. */
  readonly pauses: { readonly microtask: number; readonly immediate: number; readonly timer: number; readonly onSocket: number }
}

/** Pause at every 97th payload, and at the first payload read off the socket (the hand-over from postgres.js). */
const PAUSE_EVERY = 97
const RESUMES = ["microtask", "immediate", "timer"] as const

/** The COPY's bytes through copyOut (on `pool` unless `on`), pausing on a fixed schedule when `pauses` and resuming
 * in turn from a microtask, setImmediate and a timer; then a query on the transaction. */
const tapped = (statement: string, options: { pauses?: boolean; on?: postgres.Sql } = {}): Promise<Tapped> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* openSession(options.on ?? pool, settings, context)
        const hash = createHash("sha256")
        const holder: { copy?: CopyOut } = {}
        let direct = false
        let payloads = 0
        const pauses = { microtask: 0, immediate: 0, timer: 0, onSocket: 0 }
        const copy = yield* copyOut(sql, statement, (bytes, start, end) => {
          hash.update(bytes.subarray(start, end))
          const onSocket = holder.copy?.fromSocket() ?? false
          const handOver = onSocket && !direct
          direct ||= onSocket
          if (options.pauses === true && (++payloads % PAUSE_EVERY === 0 || handOver)) {
            holder.copy?.pause()
            const resume = RESUMES[(pauses.microtask + pauses.immediate + pauses.timer) % RESUMES.length]!
            pauses[resume]++
            if (onSocket) pauses.onSocket++
            if (resume === "microtask") queueMicrotask(() => holder.copy?.resume())
            else if (resume === "immediate") setImmediate(() => holder.copy?.resume())
            else setTimeout(() => holder.copy?.resume(), 1)
          }
        }, context)
        holder.copy = copy
        const failure = yield* Effect.promise(() => copy.done.then(() => undefined, (cause: unknown) => cause))
        const after = failure === undefined ? (yield* Effect.promise(() => sql.unsafe("SELECT 42 AS n")))[0]?.n : undefined
        return { hash: hash.digest("hex"), direct, failure, after, pauses }
      })
    )
  )

/** The parts of a result every COPY that ended well shares. */
const outcomeOf = ({ hash, direct, failure, after }: Tapped) => ({ hash, direct, failure, after })

/** With pauses, every way of resuming happened, and (when the tap took over) a pause while reading off the socket. */
const expectPausesMade = (result: Tapped) => {
  expect(result.pauses.microtask).toBeGreaterThan(0)
  expect(result.pauses.immediate).toBeGreaterThan(0)
  expect(result.pauses.timer).toBeGreaterThan(0)
  if (result.direct) expect(result.pauses.onSocket).toBeGreaterThan(0)
}

const sameAsPlain = async (statement: string, pauses: boolean, direct: boolean) => {
  const expected = await reference(statement)
  const result = await tapped(statement, { pauses })
  expect(result.failure).toBeUndefined()
  expect(result.hash).toBe(expected)
  expect(result.direct).toBe(direct)
  expect(result.after).toBe(42)
  if (pauses) expectPausesMade(result)
}

describe("copy-tap edges", () => {
  it("rows around 64 KiB, of varying sizes and one of 5 MiB are the server's bytes, with and without pauses", { timeout: 30000 }, async () => {
    // Payloads of 65530–65541 bytes (the int, a tab, the text, a newline).
    await sameAsPlain(`COPY (SELECT i, repeat('a', 65520 + i) FROM generate_series(1, 12) AS i) TO STDOUT`, false, true)
    await sameAsPlain(`COPY (SELECT i, repeat(chr(97 + i % 26), (i * 7919) % 70000) FROM generate_series(1, 600) AS i) TO STDOUT`, true, true)
    await sameAsPlain(`COPY (SELECT 1, repeat('b', 5 * 1024 * 1024), 2) TO STDOUT`, false, false)
    await sameAsPlain(
      `COPY (SELECT i, CASE WHEN i % 1000 = 0 THEN repeat('c', 5 * 1024 * 1024 + i / 1000) ELSE repeat('d', i % 17) END FROM generate_series(1, 5000) AS i) TO STDOUT`,
      true,
      true
    )
    await sameAsPlain(`COPY (SELECT i FROM generate_series(1, 300000) AS i) TO STDOUT (FORMAT binary)`, true, true)
  })

  it("a value of 96 MiB read off the socket is joined once, not copied again at every socket read", { timeout: 20000 }, async () => {
    // Joining the pieces at every read took 30 s for 64 MiB (quadratic); a value may be up to 1 GB.
    const size = 96 * 1024 * 1024
    const expected = createHash("sha256")
    for (let i = 1; i <= 20000; i++) expected.update(`${i}\t${i === 10000 ? "" : "a"}`).update(i === 10000 ? "z".repeat(size) : "").update("\n")
    const started = Date.now()
    const result = await tapped(
      `COPY (SELECT i, CASE WHEN i = 10000 THEN repeat('z', ${size}) ELSE 'a' END FROM generate_series(1, 20000) AS i) TO STDOUT`
    )
    expect(outcomeOf(result)).toEqual({ hash: expected.digest("hex"), direct: true, failure: undefined, after: 42 })
    expect(Date.now() - started).toBeLessThan(15000)
  })

  it("three exports' COPYs at once on three connections, each read off its own socket", { timeout: 15000 }, async () => {
    const three = postgres(testPgUrl(), { max: 3, fetch_types: false, prepare: false, onnotice: () => {} })
    const statements = [100000, 150000, 200000].map(
      (rows) => `COPY (SELECT i, repeat(chr(97 + i % 26), i % 90) FROM generate_series(1, ${rows}) AS i) TO STDOUT`
    )
    const expected = await Promise.all(statements.map(reference))
    const results = await Promise.all(statements.map((statement) => tapped(statement, { pauses: true, on: three })))
    await three.end({ timeout: 0 })
    expect(results.map(outcomeOf)).toEqual(expected.map((hash) => ({ hash, direct: true, failure: undefined, after: 42 })))
    for (const result of results) expectPausesMade(result)
  })

  it("an empty result, one row, and a short COPY read by postgres.js followed by one read off the socket", { timeout: 15000 }, async () => {
    await sameAsPlain(`COPY (SELECT 1 WHERE false) TO STDOUT`, false, false)
    await sameAsPlain(`COPY (SELECT 1) TO STDOUT`, false, false)
    const result = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const hashes: Array<string> = []
          const direct: Array<boolean> = []
          for (const rows of [1, 100000, 2, 100000]) {
            const hash = createHash("sha256")
            const holder: { copy?: CopyOut } = {}
            let seen = false
            const copy = yield* copyOut(sql, `COPY (SELECT i, repeat('x', i % 61) FROM generate_series(1, ${rows}) AS i) TO STDOUT`, (bytes, start, end) => {
              hash.update(bytes.subarray(start, end))
              seen ||= holder.copy?.fromSocket() ?? false
            }, context)
            holder.copy = copy
            yield* Effect.promise(() => copy.done)
            hashes.push(hash.digest("hex"))
            direct.push(seen)
          }
          return { hashes, direct, after: (yield* Effect.promise(() => sql.unsafe("SELECT 42 AS n")))[0]?.n }
        })
      )
    )
    const expected = await Promise.all(
      [1, 100000, 2, 100000].map((rows) => reference(`COPY (SELECT i, repeat('x', i % 61) FROM generate_series(1, ${rows}) AS i) TO STDOUT`))
    )
    expect(result.hashes).toEqual(expected)
    expect(result.direct).toEqual([false, true, false, true])
    expect(result.after).toBe(42)
  })

  it("a backend terminated while CopyData is read off the socket fails the COPY as a retryable error", { timeout: 15000 }, async () => {
    let direct = false
    const exit = await Effect.runPromiseExit(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const [row] = yield* Effect.promise(() => sql.unsafe<Array<{ pid: number }>>("SELECT pg_backend_pid() AS pid"))
          const holder: { copy?: CopyOut } = {}
          let n = 0
          const copy = yield* copyOut(sql, "COPY (SELECT i, repeat('x', 200) FROM generate_series(1, 5000) AS i, generate_series(1, 10000) AS j) TO STDOUT", () => {
            if (++n === 20000) {
              direct = holder.copy?.fromSocket() ?? false
              void admin`SELECT pg_terminate_backend(${row!.pid})`.then(() => undefined)
            }
          }, context)
          holder.copy = copy
          return yield* Effect.tryPromise({ try: () => copy.done, catch: (cause) => copyFailure(cause, context, "reading rows") })
        })
      )
    )
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) && exit.cause._tag === "Fail" ? (exit.cause.error as { retryable?: boolean }) : undefined
    expect(error?.retryable).toBe(true)
    expect(direct).toBe(true)
    // The pool reconnects and runs the next statements (postgres.js 3.4.9 keeps the ErrorResponse that preceded the
    // close and fails the first statement after the reconnect with it, with or without the tap).
    await pool`SELECT 1 AS one`.catch(() => undefined)
    expect((await pool`SELECT 1 AS one`)[0]?.one).toBe(1)
  })

  it("statement_timeout, or closing the scope, while read off the socket: the connection runs the next statement", { timeout: 20000 }, async () => {
    const timeOut = () => Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, { ...settings, statementTimeoutMs: 1000 }, context)
          let direct = false
          const holder: { copy?: CopyOut } = {}
          const copy = yield* copyOut(sql, "COPY (SELECT i, repeat('x', 100) FROM generate_series(1, 5000) AS i, generate_series(1, 10000) AS j) TO STDOUT", () => {
            direct ||= holder.copy?.fromSocket() ?? false
          }, context)
          holder.copy = copy
          const failure = yield* Effect.promise(() => copy.done.then(() => undefined, (cause: { code?: string }) => cause.code))
          return { failure, direct }
        })
      )
    )
    // On a loaded machine the tap may not have taken over within the statement's second: such a try says nothing
    // about the state the test is about, so it is made again (the connection must run the next statement either way).
    const tries: Array<{ failure: string | undefined; direct: boolean }> = []
    while (tries.length < 4 && !tries.at(-1)?.direct) {
      tries.push(await timeOut())
      expect((await pool`SELECT 2 AS two`)[0]?.two).toBe(2)
    }
    expect(tries.map((t) => t.failure)).toEqual(tries.map(() => "57014"))
    expect(tries.at(-1)?.direct).toBe(true)

    let payloads = 0
    await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const holder: { copy?: CopyOut } = {}
          const copy = yield* copyOut(sql, "COPY (SELECT i, repeat('x', 100) FROM generate_series(1, 5000) AS i, generate_series(1, 10000) AS j) TO STDOUT", () => {
            // Interrupted mid-way through a socket read, with the socket paused.
            if (++payloads === 200000) holder.copy?.pause()
          }, context)
          holder.copy = copy
          while (payloads < 200000) yield* Effect.sleep("5 millis")
          expect(copy.fromSocket()).toBe(true)
        })
      )
    )
    expect((await pool`SELECT 3 AS three`)[0]?.three).toBe(3)
    // Another COPY on that connection is whole.
    await sameAsPlain(`COPY (SELECT i, repeat('x', i % 61) FROM generate_series(1, 100000) AS i) TO STDOUT`, true, true)
  })

  it("an error raised by a row while read off the socket fails the COPY; the rows before it are whole", { timeout: 15000 }, async () => {
    const result = await tapped(`COPY (SELECT 1 / (i - 250000), repeat('x', i % 300) FROM generate_series(1, 300000) AS i) TO STDOUT`, {
      pauses: true
    })
    expect(result.direct).toBe(true)
    expectPausesMade(result)
    expect(String(result.failure)).toContain("division by zero")
    expect((await pool`SELECT 4 AS four`)[0]?.four).toBe(4)
  })
})

describe("copy-tap, socket reads of 1–N bytes", () => {
  it("every cut of a message (inside its header, its payload, between messages) keeps the server's bytes", { timeout: 30000 }, async () => {
    for (const [most, rows] of [[3, 150], [9, 500], [70, 3000], [700, 10000], [9000, 40000]] as const) {
      const statement = `COPY (SELECT i, repeat('x', i % 40) FROM generate_series(1, ${rows}) AS i) TO STDOUT`
      const expected = await reference(statement)
      const proxy = await choppingProxy(most)
      const chopped = postgres(proxy.url, { max: 1, fetch_types: false, prepare: false, onnotice: () => {} })
      const result = await Effect.runPromise(
        Effect.scoped(
          Effect.gen(function* () {
            const sql = yield* openSession(chopped, settings, context)
            const hash = createHash("sha256")
            const holder: { copy?: CopyOut } = {}
            let direct = false
            let n = 0
            const copy = yield* copyOut(sql, statement, (bytes, start, end) => {
              hash.update(bytes.subarray(start, end))
              direct ||= holder.copy?.fromSocket() ?? false
              if (++n % 13 === 0) {
                holder.copy?.pause()
                setImmediate(() => holder.copy?.resume())
              }
            }, context)
            holder.copy = copy
            yield* Effect.promise(() => copy.done)
            const after = (yield* Effect.promise(() => sql.unsafe("SELECT 42 AS n")))[0]?.n
            return { hash: hash.digest("hex"), direct, after }
          })
        )
      )
      await chopped.end({ timeout: 0 })
      await proxy.close()
      expect({ hash: result.hash, after: result.after }).toEqual({ hash: expected, after: 42 })
      // Reads of many bytes show where postgres.js stopped, so the tap takes over. Reads of a few bytes usually do
      // not (the tap then stays with postgres.js' stream), but on a loaded machine the proxy's small writes can
      // reach the client coalesced: either way the bytes must be the server's, which is what the hash checks.
      if (most >= 70) expect(result.direct).toBe(true)
    }
  })
})

describe("copy-tap, notices and an error cut by socket reads", () => {
  it("rows before the error are whole and in order, and the connection runs the next statement", { timeout: 15000 }, async () => {
    const rows: Array<string> = []
    for (let i = 1; i < 4000; i++) rows.push(`${i}\t${"x".repeat(i % 40)}\n`)
    const whole = rows.join("")
    const proxy = await choppingProxy(70)
    const chopped = postgres(proxy.url, { max: 1, fetch_types: false, prepare: false, onnotice: () => {} })
    const received: Array<Buffer> = []
    let direct = false
    const failure = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(chopped, settings, context)
          const holder: { copy?: CopyOut } = {}
          const copy = yield* copyOut(
            sql,
            `COPY (SELECT rivet_tap_edge(i), repeat('x', i % 40) FROM generate_series(1, 5000) AS i) TO STDOUT`,
            (bytes, start, end) => {
              received.push(Buffer.from(bytes.subarray(start, end)))
              direct ||= holder.copy?.fromSocket() ?? false
            },
            context
          )
          holder.copy = copy
          return yield* Effect.promise(() => copy.done.then(() => "none", (cause: unknown) => String(cause)))
        })
      )
    )
    const after = (await chopped`SELECT 5 AS five`)[0]?.five
    await chopped.end({ timeout: 0 })
    await proxy.close()
    expect(failure).toContain("division by zero")
    expect(direct).toBe(true)
    // The server sends every row before the failing one, then the error.
    expect(Buffer.concat(received).toString("utf8")).toBe(whole)
    expect(after).toBe(5)
  })
})

describe("copy-tap without postgres.js' stream", () => {
  it("a stream whose read throws or resumes no socket is not tapped, and net.Socket's resume is left as it was", () => {
    const original = net.Socket.prototype.resume
    const throwing = new Readable({
      read() {
        throw new Error("no socket")
      }
    })
    expect(tapCopy(throwing, () => {})).toBeUndefined()
    expect(net.Socket.prototype.resume).toBe(original)
    expect(tapCopy(new Readable({ read() {} }), () => {})).toBeUndefined()
    expect(net.Socket.prototype.resume).toBe(original)
  })
})
