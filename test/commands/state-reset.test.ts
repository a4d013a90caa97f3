import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { renderReset } from "../../src/cli/state-render.js"
import { resetExport } from "../../src/commands/state-reset.js"
import { SourceError, StateError } from "../../src/core/errors.js"
import { changeLogSource, configOf } from "./change-log-source.js"

// `rivet state reset -e X` on a mode: cdc export drops its slot through the source's change log, after reaching the
// source and after the state is reset; an unreachable source resets nothing. Other modes never touch the source.

const configWith = (source: ReturnType<typeof changeLogSource>, cdc: Record<string, unknown> = {}) =>
  configOf(
    { type: "changelog" },
    [
      { name: "orders", table: "orders", mode: "cdc", cdc },
      { name: "customers", table: "customers", mode: "incremental", cursor_column: "id" }
    ],
    [source.plugin]
  )

/** The store's reset, recording that it ran. */
const clearing = (log: Array<string>, cursor = true) =>
  Effect.sync(() => {
    log.push("state reset")
    return { cursor, abandonedRuns: 0 }
  })

describe("rivet state reset on a mode: cdc export", () => {
  it("reaches the source, resets the state, then drops the slot, and says so", async () => {
    const source = changeLogSource()
    const log = source.calls
    const result = await Effect.runPromise(resetExport(await configWith(source), "orders", () => clearing(log)))
    expect(log).toEqual(["check", "state reset", "drop rivet_orders"])
    expect(renderReset("orders", result)).toBe(
      "State reset for export 'orders': cursor cleared, 0 unfinished run(s) abandoned.\n" +
        "Dropped replication slot rivet_orders: the next run starts from a new snapshot."
    )
    const none = await Effect.runPromise(resetExport(await configWith(changeLogSource(), { slot: "mine", initial: "none" }), "orders", () => clearing([])))
    expect(renderReset("orders", none)).toBe(
      "State reset for export 'orders': cursor cleared, 0 unfinished run(s) abandoned.\n" +
        "Dropped replication slot mine: the next run creates it again and starts with the changes from then on (initial: none)."
    )
  })

  it("resets every export reading a shared slot with it, then drops the slot once", async () => {
    const source = changeLogSource()
    const config = await configOf(
      { type: "changelog" },
      [
        { name: "orders", table: "orders", mode: "cdc", cdc: { slot: "shop" } },
        { name: "items", table: "items", mode: "cdc", cdc: { slot: "shop" } },
        { name: "users", table: "users", mode: "cdc" }
      ],
      [source.plugin]
    )
    const result = await Effect.runPromise(
      resetExport(config, "items", (name) =>
        Effect.sync(() => {
          source.calls.push(`state reset ${name}`)
          return { cursor: true, abandonedRuns: 0 }
        })
      )
    )
    expect(source.calls).toEqual(["check", "state reset items", "state reset orders", "drop shop"])
    expect(renderReset("items", result)).toBe(
      "State reset for export 'items': cursor cleared, 0 unfinished run(s) abandoned.\n" +
        "State reset for export 'orders': cursor cleared, 0 unfinished run(s) abandoned.\n" +
        "('orders' reads the same replication slot: reset together.)\n" +
        "Dropped replication slot shop: the next run starts from a new snapshot."
    )
  })

  it("says nothing more when there was no slot; another mode never reaches the source", async () => {
    const source = changeLogSource({ drop: Effect.succeed(false) })
    const config = await configWith(source)
    const result = await Effect.runPromise(resetExport(config, "orders", () => clearing(source.calls, false)))
    expect(renderReset("orders", result)).toBe("State reset for export 'orders': no cursor was set, 0 unfinished run(s) abandoned.")
    source.calls.length = 0
    await Effect.runPromise(resetExport(config, "customers", () => clearing(source.calls)))
    expect(source.calls).toEqual(["state reset"])
  })

  it("an unreachable source fails the reset, naming the slot, with nothing reset", async () => {
    const refused = new SourceError({ source: "changelog", message: "connect ECONNREFUSED 127.0.0.1:1", retryable: true })
    const source = changeLogSource({ check: Effect.fail(refused) })
    const error = await Effect.runPromise(Effect.flip(resetExport(await configWith(source), "orders", () => clearing(source.calls))))
    expect(source.calls).toEqual(["check"])
    expect(error.message).toBe(
      "cannot reach the source to drop replication slot rivet_orders of export 'orders' (mode: cdc): connect ECONNREFUSED 127.0.0.1:1; nothing was reset"
    )
    expect(error).toMatchObject({ _tag: "SourceError", retryable: true })
    expect(error.hint).toContain("run the reset again once the source answers")
  })

  it("a running export (its lease held) keeps its slot; a slot that fails to drop after the reset is an error saying so", async () => {
    const held = changeLogSource()
    const leased = Effect.fail(new StateError({ message: "export 'orders' is being run by run 'orders_1'", retryable: true }))
    const refused = await Effect.runPromise(Effect.either(resetExport(await configWith(held), "orders", () => leased)))
    expect(Either.isLeft(refused) && refused.left.message).toBe("export 'orders' is being run by run 'orders_1'")
    expect(held.calls).toEqual(["check"])

    const stuck = changeLogSource({ drop: Effect.fail(new SourceError({ source: "changelog", message: "permission denied", retryable: false })) })
    const error = await Effect.runPromise(Effect.flip(resetExport(await configWith(stuck), "orders", () => clearing(stuck.calls))))
    expect(stuck.calls).toEqual(["check", "state reset", "drop rivet_orders"])
    expect(error.message).toBe("the state of export 'orders' was reset, but its replication slot rivet_orders could not be dropped: permission denied")
    expect(error.hint).toBe(
      "run `rivet state reset -c <config> -e orders` again once the source answers, or drop the slot on the server: SELECT pg_drop_replication_slot('rivet_orders')"
    )
  })
})
