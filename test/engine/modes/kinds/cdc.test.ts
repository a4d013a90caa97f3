import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateConfigValue as validateWith } from "../../../../src/registry/load-config.js"

// mode: cdc's keys as the config decodes them: defaults, continuous reading, and what is refused with its path.

const validate = (exports: ReadonlyArray<Record<string, unknown>>) =>
  Effect.provide(
    validateWith({ source: { type: "postgres", url: "postgres://postgres@127.0.0.1:1/none" }, exports }, "/tmp/rivet-cdc", "test.yaml"),
    NodeFileSystem.layer
  )

const cdcExport = (name: string, extra: Record<string, unknown> = {}) => ({
  name,
  table: "public.orders",
  mode: "cdc",
  destination: { type: "local", path: `out/${name}` },
  ...extra
})

const problems = (exports: ReadonlyArray<Record<string, unknown>>) =>
  Effect.map(validate(exports), (result) => (Either.isLeft(result) ? result.left.map((error) => `${error.path}: ${error.message}`) : []))

describe("mode: cdc keys", () => {
  it.effect("defaults: snapshot first, until the current position, a run at a time; until_current: false reads continuously", () =>
    Effect.gen(function* () {
      const result = yield* validate([cdcExport("orders"), cdcExport("live", { cdc: { until_current: false, commit_interval: "5s", slot: "live_slot" } })])
      if (Either.isLeft(result)) throw new Error(result.left.map((error) => error.message).join("; "))
      const [orders, live] = result.right.exports
      expect(orders!.mode.settings).toEqual({ kind: "cdc", initial: "snapshot", untilCurrent: true, commitIntervalMs: 60_000 })
      expect([orders!.mode.followable, orders!.mode.continuous]).toEqual([true, false])
      expect(live!.mode.settings).toMatchObject({ untilCurrent: false, commitIntervalMs: 5_000, slot: "live_slot" })
      expect(live!.mode.continuous).toBe(true)
      expect(orders!.mode.sharedRead("orders", { schema: "public", name: "orders" })).toMatchObject({
        resource: "replication slot rivet_orders",
        agree: { "cdc.publication": "rivet_orders", "cdc.until_current": true }
      })
    })
  )

  it.effect("refused: one table twice on a shared slot, settings a shared slot's exports disagree on, a query, a slot name PostgreSQL would not take, cdc keys in another mode", () =>
    Effect.gen(function* () {
      // Exports of different tables share a slot (and its publication, named after it).
      const shared = { cdc: { slot: "shared" } }
      expect(yield* problems([cdcExport("a", shared), { ...cdcExport("b", shared), table: "public.items" }])).toEqual([])
      expect(yield* problems([cdcExport("a", shared), cdcExport("b", shared), { ...cdcExport("c", shared), table: "public.orders" }])).toEqual([
        "exports[1].table: export 'b' reads replication slot shared with export 'a' (exports[0]), and both have table \"public.orders\"",
        "exports[2].table: export 'c' reads replication slot shared with export 'a' (exports[0]), and both have table \"public.orders\""
      ])
      const disagree = yield* problems([
        cdcExport("a", { cdc: { slot: "shared", until_current: false } }),
        { ...cdcExport("b", { cdc: { slot: "shared", publication: "other" } }), table: "public.items" }
      ])
      expect(disagree).toEqual([
        "exports[1].cdc.publication: export 'b' reads replication slot shared with export 'a' (exports[0]), which has cdc.publication \"shared\", not \"other\"",
        "exports[1].cdc.until_current: export 'b' reads replication slot shared with export 'a' (exports[0]), which has cdc.until_current false, not true"
      ])
      // Default slot names come from the export name: these two would read one slot for one table.
      expect(yield* problems([cdcExport("a-b"), cdcExport("a_b")])).toEqual([
        "exports[1].table: export 'a_b' reads replication slot rivet_a_b with export 'a-b' (exports[0]), and both have table \"public.orders\""
      ])
      const query = yield* problems([{ name: "q", query: "select 1", mode: "cdc", destination: { type: "local", path: "out" } }])
      expect(query).toEqual(["exports[0].query: mode: cdc reads the changes of one table, named with table: (a query's rows have no change log)"])
      const slot = yield* problems([cdcExport("s", { cdc: { slot: "Orders-Slot" } })])
      expect(slot.join("\n")).toContain("exports[0].cdc.slot")
      const elsewhere = yield* problems([{ ...cdcExport("f"), mode: "full", cdc: { slot: "x" } }])
      expect(elsewhere.join("\n")).toContain("exports[0].cdc")
    })
  )
})
