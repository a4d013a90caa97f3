import * as Effect from "effect/Effect"
import { afterAll, describe, expect, it } from "vitest"
import { sqliteStateLayer } from "../../src/state/sqlite.js"
import { type RunRecord, StateStore, type UnitClaimsShape } from "../../src/state/store.js"
import { testPgUrl } from "../support/pg.js"
import { postgresBackend, withStore } from "./support.js"

// Unit claims of distributed runs (`rivet run --worker`) against a real PostgreSQL state, a fresh schema per test.

const backend = postgresBackend(testPgUrl())
afterAll(() => backend.teardown())

const run = (runId: string): RunRecord => ({
  runId,
  exportName: "orders",
  mode: "chunked",
  startedAt: "2026-12-05T02:00:00.000Z",
  status: "running",
  rows: 0,
  parts: 0,
  bytes: 0,
  checkpointed: true,
  planFingerprint: "sha256:plan"
})
const units = (count: number) => Array.from({ length: count }, (_, index) => ({ index, spec: `{"i":${index}}`, status: "pending" as const, rows: 0 }))

const withClaims = async <A>(body: (claims: UnitClaimsShape) => Effect.Effect<A, unknown, StateStore>) => {
  const target = await backend.fresh()
  return withStore(target.layer(), Effect.flatMap(StateStore, (store) => body(store.claims!)))
}

describe("unit claims in the PostgreSQL state", () => {
  it("a run is created once: the second createRun of the same id changes nothing", async () => {
    const result = await withClaims((claims) =>
      Effect.all([claims.createRun(run("r1"), units(3)), claims.createRun(run("r1"), units(5)), Effect.flatMap(StateStore, (s) => s.units("r1"))])
    )
    expect(result[0]).toBe(true)
    expect(result[1]).toBe(false)
    expect(result[2]).toHaveLength(3)
  })

  it("claims at most `cap` units at once, across workers; all done reports AllDone", async () => {
    const tags = await withClaims((claims) =>
      Effect.gen(function* () {
        yield* claims.createRun(run("r2"), units(3))
        const a = yield* claims.claim({ runId: "r2", worker: "a", ttlMs: 60_000, cap: 2 })
        const b = yield* claims.claim({ runId: "r2", worker: "b", ttlMs: 60_000, cap: 2 })
        const capped = yield* claims.claim({ runId: "r2", worker: "c", ttlMs: 60_000, cap: 2 })
        if (a._tag !== "Claimed" || b._tag !== "Claimed") return [a._tag, b._tag]
        expect(a.claim.unit.index).not.toBe(b.claim.unit.index)
        yield* claims.commit("r2", a.claim, 10, [{ path: "p0.csv", rows: 10, size_bytes: 5, content_fingerprint: "sha256:0" }])
        const c = yield* claims.claim({ runId: "r2", worker: "c", ttlMs: 60_000, cap: 2 })
        const busy = yield* claims.claim({ runId: "r2", worker: "c", ttlMs: 60_000, cap: 5 })
        if (c._tag === "Claimed") yield* claims.commit("r2", c.claim, 1, [])
        yield* claims.commit("r2", b.claim, 1, [])
        const done = yield* claims.claim({ runId: "r2", worker: "c", ttlMs: 60_000, cap: 2 })
        return [a._tag, b._tag, capped._tag, c._tag, busy._tag, done._tag]
      })
    )
    expect(tags).toEqual(["Claimed", "Claimed", "Busy", "Claimed", "Busy", "AllDone"])
  })

  it("an expired claim is taken over; the first holder can neither renew nor commit it, so its parts are never listed", async () => {
    const result = await withClaims((claims) =>
      Effect.gen(function* () {
        yield* claims.createRun(run("r3"), units(1))
        const first = yield* claims.claim({ runId: "r3", worker: "a", ttlMs: 1, cap: 1 })
        yield* Effect.sleep("20 millis")
        const second = yield* claims.claim({ runId: "r3", worker: "b", ttlMs: 60_000, cap: 1 })
        if (first._tag !== "Claimed" || second._tag !== "Claimed") return { tags: [first._tag, second._tag] }
        const renewed = yield* claims.renew("r3", first.claim, 60_000)
        const lateCommit = yield* claims.commit("r3", first.claim, 1, [{ path: "stale.csv", rows: 1, size_bytes: 1, content_fingerprint: "sha256:1" }])
        const commit = yield* claims.commit("r3", second.claim, 2, [{ path: "fresh.csv", rows: 2, size_bytes: 1, content_fingerprint: "sha256:2" }])
        const parts = yield* Effect.flatMap(StateStore, (s) => s.parts("r3"))
        const leases = yield* claims.leases("orders")
        return { tags: [first._tag, second._tag], renewed, lateCommit, commit, parts: parts.map((p) => p.path), leases }
      })
    )
    expect(result).toMatchObject({ tags: ["Claimed", "Claimed"], renewed: false, lateCommit: false, commit: true, parts: ["fresh.csv"] })
    expect(result.leases).toMatchObject([{ runId: "r3", index: 0, status: "done", worker: "b", claims: 2 }])
  })

  it("a released claim is claimable again at once", async () => {
    const again = await withClaims((claims) =>
      Effect.gen(function* () {
        yield* claims.createRun(run("r4"), units(1))
        const first = yield* claims.claim({ runId: "r4", worker: "a", ttlMs: 60_000, cap: 1 })
        if (first._tag === "Claimed") yield* claims.release("r4", first.claim)
        return (yield* claims.claim({ runId: "r4", worker: "b", ttlMs: 60_000, cap: 1 }))._tag
      })
    )
    expect(again).toBe("Claimed")
  })

  it("the SQLite state has no claims (a worker refuses it)", async () => {
    expect(await withStore(sqliteStateLayer(":memory:"), Effect.map(StateStore, (s) => s.claims))).toBeUndefined()
  })
})
