import * as Effect from "effect/Effect"
import * as Option from "effect/Option"
import { afterAll, describe, expect, it } from "vitest"
import type { PartRecord } from "../../src/core/manifest.js"
import { LATEST_SCHEMA_VERSION, MIGRATIONS } from "../../src/state/migrations.js"
import { type RunRecord, StateStore, type UnitRecord } from "../../src/state/store.js"
import { testPgUrl } from "../support/pg.js"
import { failureOf, postgresBackend, sqliteBackend, type StateBackend, withStore } from "./support.js"

const run = (runId: string, overrides: Partial<RunRecord> = {}): RunRecord => ({
  runId,
  exportName: "orders",
  mode: "full",
  startedAt: "2026-12-01T10:00:00.000Z",
  status: "running",
  rows: 0,
  parts: 0,
  bytes: 0,
  checkpointed: false,
  ...overrides
})

const part = (path: string, rows = 10): PartRecord => ({
  path,
  rows,
  size_bytes: rows * 100,
  content_fingerprint: `sha256:${path.length.toString(16).padStart(64, "0")}`
})

const unit = (index: number, overrides: Partial<UnitRecord> = {}): UnitRecord => ({
  index,
  spec: JSON.stringify({ low: index * 100, high: index * 100 + 99 }),
  status: "pending",
  rows: 0,
  ...overrides
})

const success = (rows: number, parts = 1) =>
  ({ status: "success", finishedAt: "2026-12-01T10:05:00.000Z", rows, parts, bytes: rows * 100 }) as const

const store = StateStore

/** The store's contract; every backend must pass it unchanged. */
const contract = (name: string, makeBackend: () => StateBackend) =>
  describe(name, () => {
    const backend = makeBackend()
    afterAll(() => backend.teardown())

    it("journals runs; a second run with the same id is refused", async () => {
      const target = await backend.fresh()
      const started = run("r1", { checkpointed: true, planFingerprint: "sha256:plan", identity: "{\"version\":1}", bytes: 5_000_000_000 })
      const found = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(started)
          return yield* s.run("r1")
        })
      )
      expect(Option.getOrThrow(found)).toEqual(started)
      const error = await failureOf(target.layer(), Effect.flatMap(store, (s) => s.beginRun(run("r1"))))
      expect(error._tag).toBe("StateError")
      expect(error.message).toContain("'r1' is already recorded")
      expect(await withStore(target.layer(), Effect.flatMap(store, (s) => s.run("nope")))).toEqual(Option.none())
    })

    it("finishRun records the outcome and parts, and sets the cursor only when given", async () => {
      const target = await backend.fresh()
      const cursor = { column: "updated_at", value: "2026-12-01T10:00:00.123456Z", type: "timestamptz" }
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("r1"))
          yield* s.finishRun("r1", success(20, 2), { parts: [part("b.parquet"), part("a.parquet")], cursor })
          yield* s.beginRun(run("r2", { startedAt: "2026-12-02T10:00:00.000Z" }))
          yield* s.finishRun("r2", { ...success(0, 0), status: "skipped" })
          return { r1: yield* s.run("r1"), parts: yield* s.parts("r1"), cursor: yield* s.cursor("orders") }
        })
      )
      expect(Option.getOrThrow(result.r1)).toMatchObject({ status: "success", rows: 20, parts: 2, bytes: 2000 })
      expect(Option.getOrThrow(result.r1).finishedAt).toBe("2026-12-01T10:05:00.000Z")
      expect(result.parts.map((p) => p.path)).toEqual(["b.parquet", "a.parquet"])
      expect(result.parts[0]).toMatchObject({ runId: "r1", exportName: "orders", rows: 10, size_bytes: 1000 })
      expect(result.parts[0]?.unit).toBeUndefined()
      expect(result.parts[0]?.committedAt).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
      expect(Option.getOrThrow(result.cursor)).toEqual(cursor) // r2 finished without a cursor: unchanged
    })

    it("finishRun is one transaction: a failing cursor write leaves the run and its parts untouched", async () => {
      const target = await backend.fresh()
      const badCursor = { column: "id", value: null as unknown as string, type: "int64" }
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("r1"))
          const error = yield* Effect.flip(s.finishRun("r1", success(10), { parts: [part("a.csv")], cursor: badCursor }))
          return { error, run: yield* s.run("r1"), parts: yield* s.parts("r1"), cursor: yield* s.cursor("orders") }
        })
      )
      expect(result.error._tag).toBe("StateError")
      expect(Option.getOrThrow(result.run).status).toBe("running")
      expect(result.parts).toEqual([])
      expect(result.cursor).toEqual(Option.none())
      const unknown = await failureOf(target.layer(), Effect.flatMap(store, (s) => s.finishRun("nope", success(1))))
      expect(unknown.message).toContain("no run 'nope'")
    })

    it("finishRun's cursor is compare-and-set: stored only while the cursor is still the one the run started from", async () => {
      const target = await backend.fresh()
      const at = (value: string) => ({ column: "id", value, type: "int64" })
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("r1"))
          yield* s.finishRun("r1", success(10), { cursor: at("10"), cursorFrom: null })
          // r2 and r3 both started from 10; r3 stores 30 first, so r2 (which reached only 20) must not move it back.
          yield* s.beginRun(run("r2"))
          yield* s.beginRun(run("r3"))
          yield* s.finishRun("r3", success(20), { cursor: at("30"), cursorFrom: at("10") })
          const refused = yield* Effect.flip(s.finishRun("r2", success(10), { parts: [part("r2.csv")], cursor: at("20"), cursorFrom: at("10") }))
          // A repeated write (the first one committed, its answer was lost) is not a conflict.
          yield* s.finishRun("r3", success(20), { cursor: at("30"), cursorFrom: at("10") })
          return { refused, cursor: yield* s.cursor("orders"), r2: yield* s.run("r2"), r2Parts: yield* s.parts("r2") }
        })
      )
      expect(result.refused.message).toContain("the stored cursor moved while run 'r2' ran: it started from id = 10, the state now holds id = 30")
      expect(result.refused.message).toContain("rather than set to id = 20")
      expect(Option.getOrThrow(result.cursor).value).toBe("30")
      expect(Option.getOrThrow(result.r2).status).toBe("running") // nothing of the refused call was written
      expect(result.r2Parts).toEqual([])
    })

    it("leases: one holder at a time, renewed and released only by its own token, expired ones taken over", async () => {
      const target = await backend.fresh()
      const request = (token: string, ttlMs = 60_000, pid = 100) => ({ key: "orders", exportName: "orders", token, pid, host: "host-a", ttlMs })
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          const first = yield* s.acquireLease(request("a"))
          const again = yield* s.acquireLease(request("a")) // a retried acquisition of the same token keeps it
          const second = yield* s.acquireLease(request("b", 60_000, 200))
          const renewed = yield* s.renewLease({ key: "orders", token: "a" }, 60_000, "run-a")
          const notOurs = yield* s.renewLease({ key: "orders", token: "b" }, 60_000)
          const listed = yield* s.leases("orders")
          yield* s.releaseLease({ key: "orders", token: "b" }) // not b's: nothing happens
          const stillHeld = yield* s.acquireLease(request("c"))
          yield* s.releaseLease({ key: "orders", token: "a" })
          const free = yield* s.acquireLease(request("c", 1))
          yield* Effect.sleep("20 millis")
          const takeover = yield* s.acquireLease(request("d"))
          const loser = yield* s.renewLease({ key: "orders", token: "c" }, 60_000)
          const other = yield* s.acquireLease({ ...request("e"), key: "customers", exportName: "customers" })
          return { first, again, second, renewed, notOurs, listed, stillHeld, free, takeover, loser, other, all: yield* s.leases() }
        })
      )
      expect(result.first._tag).toBe("Acquired")
      expect(result.again._tag).toBe("Acquired")
      expect(result.again._tag === "Acquired" && result.again.takenOver).toBeFalsy()
      expect(result.second).toMatchObject({ _tag: "Held", holder: { key: "orders", pid: 100, host: "host-a" } })
      expect(result.renewed).toMatchObject({ _tag: "Renewed", holder: { runId: "run-a", pid: 100 } })
      expect(result.notOurs).toMatchObject({ _tag: "Lost", holder: { runId: "run-a" } })
      expect(result.listed).toHaveLength(1)
      expect(result.listed[0]!.expiresAt > result.listed[0]!.heartbeatAt).toBe(true)
      expect(result.stillHeld).toMatchObject({ _tag: "Held", holder: { runId: "run-a" } })
      expect(result.free._tag).toBe("Acquired")
      expect(result.takeover).toMatchObject({ _tag: "Acquired", takenOver: { key: "orders", pid: 100 } })
      expect(result.loser._tag).toBe("Lost")
      expect(result.other._tag).toBe("Acquired") // leases are per key
      expect(result.all.map((lease) => lease.key)).toEqual(["customers", "orders"])
    })

    it("reset refuses while a run holds the export's lease, and works once it is released", async () => {
      const target = await backend.fresh()
      const proof = { key: "orders", token: "a" }
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("r1"))
          yield* s.finishRun("r1", success(1), { cursor: { column: "id", value: "1", type: "int64" } })
          yield* s.acquireLease({ ...proof, exportName: "orders", pid: 7, host: "h", ttlMs: 60_000 })
          const refused = yield* Effect.flip(s.reset("orders"))
          const kept = yield* s.cursor("orders")
          yield* s.releaseLease(proof)
          return { refused, kept, reset: yield* s.reset("orders") }
        })
      )
      expect(result.refused.message).toContain("export 'orders' is being run by a run not journaled yet (pid 7 on h): its state is not reset while it runs")
      expect(result.refused.retryable).toBe(true)
      expect(Option.getOrThrow(result.kept).value).toBe("1")
      expect(result.reset.cursor).toBe(true)
    })

    it("finishRun with a lease proof writes nothing once that lease is another run's", async () => {
      const target = await backend.fresh()
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.acquireLease({ key: "orders", exportName: "orders", token: "a", pid: 1, host: "h", ttlMs: 1 })
          yield* Effect.sleep("20 millis")
          yield* s.acquireLease({ key: "orders", exportName: "orders", token: "b", pid: 2, host: "h", ttlMs: 60_000 })
          yield* s.beginRun(run("r1"))
          const refused = yield* Effect.flip(
            s.finishRun("r1", success(1), { cursor: { column: "id", value: "1", type: "int64" }, lease: { key: "orders", token: "a" } })
          )
          yield* s.finishRun("r1", success(1), { lease: { key: "orders", token: "b" } })
          return { refused, cursor: yield* s.cursor("orders"), run: yield* s.run("r1") }
        })
      )
      expect(result.refused.message).toContain("no longer holds the lease on 'orders'")
      expect(result.refused.message).toContain("(pid 2 on h) took it over")
      expect(result.cursor).toEqual(Option.none())
      expect(Option.getOrThrow(result.run).status).toBe("success")
    })

    it("commitUnit marks units done and replaces a re-committed unit's parts; parts come in unit order", async () => {
      const target = await backend.fresh()
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("r1", { checkpointed: true }))
          yield* s.savePlan("r1", [unit(0), unit(1), unit(2)])
          yield* s.commitUnit("r1", unit(1, { rows: 20 }), [part("u1-a"), part("u1-b")])
          yield* s.commitUnit("r1", unit(0, { rows: 10 }), [part("u0-a")])
          yield* s.commitUnit("r1", unit(1, { rows: 5 }), [part("u1-c", 5)])
          // Keyset pages are discovered one by one: a unit the plan did not have is inserted.
          yield* s.commitUnit("r1", unit(7, { rows: 3, lastKey: "[42]" }), [part("u7", 3)])
          yield* s.savePlan("r1", [unit(0), unit(1), unit(2)]) // saved again (resume): done units stay done
          yield* s.finishRun("r1", success(38, 4), { parts: [part("tail")] })
          return { units: yield* s.units("r1"), parts: yield* s.parts("r1") }
        })
      )
      expect(result.units.map((u) => [u.index, u.status, u.rows])).toEqual([
        [0, "done", 10],
        [1, "done", 5],
        [2, "pending", 0],
        [7, "done", 3]
      ])
      expect(result.units[3]?.lastKey).toBe("[42]")
      expect(result.units[2]?.lastKey).toBeUndefined()
      expect(result.parts.map((p) => [p.path, p.unit])).toEqual([
        ["u0-a", 0],
        ["u1-c", 1],
        ["u7", 7],
        ["tail", undefined]
      ])
      // Only done units' parts count: a unit back to pending hides its parts.
      await target.query("UPDATE rivet_units SET status = 'pending' WHERE idx = 1")
      const parts = await withStore(target.layer(), Effect.flatMap(store, (s) => s.parts("r1")))
      expect(parts.map((p) => p.path)).toEqual(["u0-a", "u7", "tail"])
    })

    it("keeps a partitioned part's values (NULL, long and non-ASCII ones included); an unpartitioned part has none", async () => {
      const target = await backend.fresh()
      const values = { name: `${"L".repeat(300)}\u00e9e\u0301`, tag: null, "k$2": "a/b" }
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("r1", { checkpointed: true }))
          yield* s.savePlan("r1", [unit(0)])
          yield* s.commitUnit("r1", unit(0, { rows: 10 }), [{ ...part("name=x/u0-a"), partition: values }, part("u0-b")])
          return yield* s.parts("r1")
        })
      )
      expect(result.map((p) => p.partition)).toEqual([values, undefined])
      expect(Object.keys(result[0]!.partition!)).toEqual(["name", "tag", "k$2"])
    })

    it("commitUnit and savePlan refuse an unknown run; concurrent commits all land", async () => {
      const target = await backend.fresh()
      const error = await failureOf(target.layer(), Effect.flatMap(store, (s) => s.commitUnit("nope", unit(0), [])))
      expect(error.message).toContain("no run 'nope'")
      const parts = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("r1", { checkpointed: true }))
          yield* Effect.forEach(
            Array.from({ length: 12 }, (_, i) => i),
            (i) => s.commitUnit("r1", unit(i, { rows: 1 }), [part(`p${i}-a`, 1), part(`p${i}-b`, 1)]),
            { concurrency: "unbounded" }
          )
          return yield* s.parts("r1")
        })
      )
      expect(parts).toHaveLength(24)
      expect(parts.map((p) => p.unit)).toEqual(Array.from({ length: 24 }, (_, i) => Math.floor(i / 2)))
    })

    it("unfinishedRun: newest checkpointed run that is running, failed or interrupted", async () => {
      const target = await backend.fresh()
      const at = (day: number) => `2026-12-${String(day).padStart(2, "0")}T10:00:00.000Z`
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          const none = yield* s.unfinishedRun("orders")
          yield* s.beginRun(run("old-failed", { checkpointed: true, startedAt: at(1), status: "failed" }))
          yield* s.beginRun(run("ok", { checkpointed: true, startedAt: at(2), status: "success" }))
          yield* s.beginRun(run("plain-failed", { startedAt: at(3), status: "failed" }))
          yield* s.beginRun(run("gave-up", { checkpointed: true, startedAt: at(4), status: "abandoned" }))
          yield* s.beginRun(run("skip", { checkpointed: true, startedAt: at(5), status: "skipped" }))
          yield* s.beginRun(run("other", { checkpointed: true, startedAt: at(6), exportName: "customers" }))
          const first = yield* s.unfinishedRun("orders")
          yield* s.beginRun(run("cut", { checkpointed: true, startedAt: at(7) }))
          yield* s.finishRun("cut", { ...success(5), status: "interrupted" })
          const second = yield* s.unfinishedRun("orders")
          yield* s.reopenRun("cut")
          const reopened = yield* s.run("cut")
          return { none, first, second, reopened, customers: yield* s.unfinishedRun("customers") }
        })
      )
      expect(result.none).toEqual(Option.none())
      expect(Option.getOrThrow(result.first).runId).toBe("old-failed")
      expect(Option.getOrThrow(result.second).runId).toBe("cut")
      expect(Option.getOrThrow(result.reopened)).toMatchObject({ status: "running", finishedAt: undefined })
      expect(Option.getOrThrow(result.customers).runId).toBe("other")
      const error = await failureOf(target.layer(), Effect.flatMap(store, (s) => s.reopenRun("nope")))
      expect(error.message).toContain("no run 'nope'")
    })

    it("reset clears cursor and baseline, abandons unfinished runs, keeps the journal and files", async () => {
      const target = await backend.fresh()
      const cursor = { column: "id", value: "41234", type: "int64" }
      const baseline = { fingerprint: "sha256:abc", columns: '[{"name":"id","type":"int64"}]', updatedAt: "2026-12-01T10:00:00.000Z" }
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("done"))
          yield* s.finishRun("done", success(10), { parts: [part("x.parquet")], cursor })
          yield* s.setSchemaBaseline("orders", baseline)
          yield* s.beginRun(run("cp-failed", { checkpointed: true, status: "failed", startedAt: "2026-12-03T00:00:00.000Z" }))
          yield* s.beginRun(run("cp-running", { checkpointed: true, startedAt: "2026-12-04T00:00:00.000Z" }))
          yield* s.beginRun(run("keep", { exportName: "customers", checkpointed: true }))
          yield* s.finishRun("keep", { ...success(1), status: "failed" }, { cursor })
          const first = yield* s.reset("orders")
          const second = yield* s.reset("orders")
          return {
            first,
            second,
            cursor: yield* s.cursor("orders"),
            baseline: yield* s.schemaBaseline("orders"),
            unfinished: yield* s.unfinishedRun("orders"),
            runs: yield* s.runs("orders", 10),
            files: yield* s.files("orders", 10),
            customers: { cursor: yield* s.cursor("customers"), unfinished: yield* s.unfinishedRun("customers") }
          }
        })
      )
      expect(result.first).toEqual({ cursor: true, abandonedRuns: 2 })
      expect(result.second).toEqual({ cursor: false, abandonedRuns: 0 })
      expect(result.cursor).toEqual(Option.none())
      expect(result.baseline).toEqual(Option.none())
      expect(result.unfinished).toEqual(Option.none())
      expect(result.runs.map((r) => [r.runId, r.status])).toEqual([
        ["cp-running", "abandoned"],
        ["cp-failed", "abandoned"],
        ["done", "success"]
      ])
      expect(result.runs[0]?.finishedAt).toBeDefined()
      expect(result.files.map((f) => f.path)).toEqual(["x.parquet"])
      expect(Option.isSome(result.customers.cursor)).toBe(true)
      expect(Option.getOrThrow(result.customers.unfinished).runId).toBe("keep")
    })

    it("runs, files and exports: newest first, filtered, limited", async () => {
      const target = await backend.fresh()
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          for (const [i, exportName] of ["orders", "customers", "orders"].entries()) {
            const id = `r${i}`
            yield* s.beginRun(run(id, { exportName, startedAt: `2026-12-0${i + 1}T10:00:00.000Z` }))
            yield* Effect.sleep("5 millis") // distinct committed_at
            yield* s.finishRun(id, success(10 * (i + 1)), { parts: [part(`${id}-0`), part(`${id}-1`)] })
          }
          yield* s.finishRun("r0", success(10), { cursor: { column: "id", value: "9", type: "int64" } })
          yield* s.beginRun(run("lonely", { exportName: "audit", startedAt: "2026-12-09T10:00:00.000Z" }))
          const empty = yield* s.files("nobody", 10)
          return {
            runs: yield* s.runs(undefined, 10),
            ordersRuns: yield* s.runs("orders", 1),
            files: yield* s.files(undefined, 3),
            customerFiles: yield* s.files("customers", 10),
            empty,
            exports: yield* s.exports
          }
        })
      )
      expect(result.runs.map((r) => r.runId)).toEqual(["lonely", "r2", "r1", "r0"])
      expect(result.ordersRuns.map((r) => r.runId)).toEqual(["r2"])
      expect(result.files.map((f) => f.path)).toEqual(["r2-0", "r2-1", "r1-0"])
      expect(result.customerFiles.map((f) => f.path)).toEqual(["r1-0", "r1-1"])
      expect(result.empty).toEqual([])
      expect(result.exports.map((e) => [e.exportName, e.lastRun?.runId, e.cursor?.value])).toEqual([
        ["audit", "lonely", undefined],
        ["customers", "r1", undefined],
        ["orders", "r2", "9"]
      ])
    })

    it("schema baselines: absent, set, replaced", async () => {
      const target = await backend.fresh()
      const result = await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          const before = yield* s.schemaBaseline("orders")
          yield* s.setSchemaBaseline("orders", { fingerprint: "sha256:1", columns: "[]", updatedAt: "2026-12-01T00:00:00.000Z" })
          yield* s.setSchemaBaseline("orders", { fingerprint: "sha256:2", columns: '[{"name":"id","type":"int32"}]', updatedAt: "2026-12-02T00:00:00.000Z" })
          return { before, after: yield* s.schemaBaseline("orders"), exports: yield* s.exports }
        })
      )
      expect(result.before).toEqual(Option.none())
      expect(Option.getOrThrow(result.after)).toEqual({
        fingerprint: "sha256:2",
        columns: '[{"name":"id","type":"int32"}]',
        updatedAt: "2026-12-02T00:00:00.000Z"
      })
      expect(result.exports).toEqual([]) // a baseline alone is not "state" for `rivet state show`
    })

    it("migrations: re-opening is idempotent, the data persists, a newer schema is refused", async () => {
      const target = await backend.fresh()
      await withStore(target.layer(), Effect.flatMap(store, (s) => s.finishRun("x", success(1))).pipe(Effect.ignore))
      await withStore(
        target.layer(),
        Effect.gen(function* () {
          const s = yield* store
          yield* s.beginRun(run("r1"))
          yield* s.finishRun("r1", success(3), { cursor: { column: "id", value: "3", type: "int64" } })
        })
      )
      const reopened = await withStore(target.layer(), Effect.flatMap(store, (s) => s.cursor("orders")))
      expect(Option.getOrThrow(reopened).value).toBe("3")
      const versions = await target.query("SELECT version FROM rivet_schema_version ORDER BY version")
      expect(versions.map((row) => Number(row["version"]))).toEqual(MIGRATIONS.map((step) => step.version))
      expect(MIGRATIONS.at(-1)?.version).toBe(LATEST_SCHEMA_VERSION)

      await target.query(
        `INSERT INTO rivet_schema_version (version, applied_at) VALUES (${LATEST_SCHEMA_VERSION + 1}, '2030-01-01T00:00:00.000Z')`
      )
      const error = await failureOf(target.layer(), Effect.flatMap(store, (s) => s.cursor("orders")))
      expect(error._tag).toBe("StateError")
      expect(error.message).toContain(`schema version ${LATEST_SCHEMA_VERSION + 1}`)
      expect(error.message).toContain("newer Rivet")
    })
  })

contract("SQLite state store", sqliteBackend)
contract("PostgreSQL state store", () => postgresBackend(testPgUrl()))
