import { createHash } from "node:crypto"
import * as Effect from "effect/Effect"
import postgres from "postgres"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { type CopyOut, copyOut } from "../../../../src/plugins/sources/postgres/copy-stream.js"
import { openSession } from "../../../../src/plugins/sources/postgres/session.js"
import { testPgUrl } from "../../../support/pg.js"
import { adminSql, plainSettings, sessionContext } from "./support.js"

// copy-tap.ts reads CopyData off the socket once postgres.js holds nothing back: the bytes must be the server's, in
// order, across socket reads, pauses and messages it hands back to postgres.js (notices, errors, the end).
const admin = adminSql()
const pool = postgres(testPgUrl(), {
  max: 1,
  fetch_types: false,
  prepare: false,
  onnotice: () => {},
  connection: { application_name: "rivet_copy_tap" }
})
beforeAll(async () => {
  await admin.unsafe(
    `CREATE OR REPLACE FUNCTION rivet_tap_noisy(i int) RETURNS int LANGUAGE plpgsql AS $$
     BEGIN IF i % 40000 = 0 THEN RAISE NOTICE 'row %', i; END IF; RETURN i; END $$`
  )
})
afterAll(async () => {
  await admin.unsafe("DROP FUNCTION IF EXISTS rivet_tap_noisy(int)")
  await pool.end({ timeout: 0 })
  await admin.end()
})

const context = sessionContext("tap")
const settings = plainSettings
const sha256 = (bytes: Uint8Array | string) => createHash("sha256").update(bytes).digest("hex")

// Rows of 1–60 bytes: CopyData messages cut by socket reads at every offset.
const ROWS = 200_000
const expectedText = () => {
  const lines: Array<string> = []
  for (let i = 1; i <= ROWS; i++) lines.push(`${i}\t${"x".repeat(i % 53)}\n`)
  return lines.join("")
}

interface Read {
  readonly bytes: Buffer
  readonly direct: boolean
  readonly failure: string | undefined
  readonly after: number | undefined
}

/** Runs `statement`, pausing after every `pauseEvery`-th payload (resumed on a timer), and collects the payloads. */
const read = (statement: string, pauseEvery: number): Promise<Read> =>
  Effect.runPromise(
    Effect.scoped(
      Effect.gen(function* () {
        const sql = yield* openSession(pool, settings, context)
        const received: Array<Uint8Array> = []
        const holder: { copy?: CopyOut } = {}
        let direct = false
        let count = 0
        const copy = yield* copyOut(sql, statement, (bytes, start, end) => {
          received.push(bytes.slice(start, end))
          direct ||= holder.copy?.fromSocket() ?? false
          if (++count % pauseEvery === 0) {
            holder.copy?.pause()
            setImmediate(() => holder.copy?.resume())
          }
        }, context)
        holder.copy = copy
        const failure = yield* Effect.promise(() => copy.done.then(() => undefined, (cause: unknown) => String(cause)))
        // The transaction (after success) or the connection (after a failure) is usable afterwards.
        const after = failure === undefined ? (yield* Effect.promise(() => sql.unsafe("SELECT 42 AS n")))[0]?.n : undefined
        return { bytes: Buffer.concat(received), direct, failure, after }
      })
    )
  )

describe("copy-tap", () => {
  it("delivers the server's bytes in order, read off the socket, across pauses", { timeout: 30000 }, async () => {
    const statement = `COPY (SELECT i, repeat('x', i % 53) FROM generate_series(1, ${ROWS}) AS i) TO STDOUT`
    const expected = sha256(expectedText())
    for (const pauseEvery of [1, 7, 5000, ROWS + 1]) {
      const result = await read(statement, pauseEvery)
      expect(result.failure).toBeUndefined()
      expect(result.direct).toBe(true)
      expect(sha256(result.bytes)).toBe(expected)
      expect(result.after).toBe(42)
    }
  })

  it("COPY after COPY on one transaction: each is read off the socket, and postgres.js reads what follows", { timeout: 30000 }, async () => {
    const statement = `COPY (SELECT i, repeat('x', i % 53) FROM generate_series(1, ${ROWS}) AS i) TO STDOUT`
    const result = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          const hashes: Array<string> = []
          const direct: Array<boolean> = []
          for (let round = 0; round < 3; round++) {
            const hash = createHash("sha256")
            const holder: { copy?: CopyOut } = {}
            let seen = false
            const copy = yield* copyOut(sql, statement, (bytes, start, end) => {
              hash.update(bytes.subarray(start, end))
              seen ||= holder.copy?.fromSocket() ?? false
            }, context)
            holder.copy = copy
            yield* Effect.promise(() => copy.done)
            hashes.push(hash.digest("hex"))
            direct.push(seen)
          }
          const after = (yield* Effect.promise(() => sql.unsafe("SELECT 42 AS n")))[0]?.n
          return { hashes, direct, after }
        })
      )
    )
    const expected = sha256(expectedText())
    expect(result.hashes).toEqual([expected, expected, expected])
    expect(result.direct).toEqual([true, true, true])
    expect(result.after).toBe(42)
  })

  it("a notice mid-stream goes to postgres.js and no row is lost", { timeout: 30000 }, async () => {
    const statement = `COPY (SELECT rivet_tap_noisy(i), repeat('x', i % 53) FROM generate_series(1, ${ROWS}) AS i) TO STDOUT`
    const result = await read(statement, 1000)
    expect(result.direct).toBe(true)
    expect(result.failure).toBeUndefined()
    expect(sha256(result.bytes)).toBe(sha256(expectedText()))
    expect(result.after).toBe(42)
  })

  it("an error mid-stream read off the socket fails the COPY after the rows before it", { timeout: 30000 }, async () => {
    const statement = `COPY (SELECT 1 / (i - 150000), repeat('x', i % 53) FROM generate_series(1, ${ROWS}) AS i) TO STDOUT`
    const result = await read(statement, 3000)
    expect(result.direct).toBe(true)
    expect(result.failure).toContain("division by zero")
    const lines = result.bytes.toString("utf8").split("\n")
    // Rows reach the client in whole messages: every one delivered before the error is complete.
    expect(lines.at(-1)).toBe("")
    expect(lines.length - 1).toBeLessThan(150000)
    // The pool's one connection is free for the next session.
    const next = await Effect.runPromise(
      Effect.scoped(
        Effect.gen(function* () {
          const sql = yield* openSession(pool, settings, context)
          return (yield* Effect.promise(() => sql.unsafe("SELECT 7 AS n")))[0]?.n
        })
      )
    )
    expect(next).toBe(7)
  })
})
