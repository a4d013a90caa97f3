import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { validateConfigValue as validateWith } from "../../src/registry/load-config.js"
import type { RivetConfig } from "../../src/config/model.js"
import { markerKeys } from "../../src/core/naming.js"

/** Decodes as the CLI does, with Node's file system for the plugins named by path. */
const validateConfigValue = (...args: Parameters<typeof validateWith>) => Effect.provide(validateWith(...args), NodeFileSystem.layer)

const source = { type: "postgres", url: "postgres://postgres@127.0.0.1:1/none" }

/** Decodes exports named `names`, all writing to `out` unless a destination is given. */
const decode = (exports: ReadonlyArray<string | Record<string, unknown>>) =>
  validateConfigValue(
    {
      source,
      exports: exports.map((entry) =>
        typeof entry === "string" ? { name: entry, query: "select 1", destination: { type: "local", path: "out" } } : entry
      )
    },
    "/tmp/rivet-shared",
    "test.yaml"
  )

const collisions = (names: ReadonlyArray<string>) =>
  Effect.map(decode(names), (result) => (Either.isLeft(result) ? result.left.map((error) => error.path) : []))

const layouts = (config: Either.Either<RivetConfig, unknown>) =>
  Either.isRight(config) ? config.right.exports.map((spec) => [spec.name, spec.sharedDestination === true]) : []

describe("exports sharing a destination", () => {
  it.effect("names whose parts cannot be confused share a place; one export alone keeps the single layout", () =>
    Effect.gen(function* () {
      expect(yield* collisions(["orders", "orders_items", "orders_2024", "orders_20250101x", "orders.v2", "customers"])).toEqual([])
      const config = yield* decode([
        "orders",
        "orders_items",
        { name: "alone", query: "select 1", destination: { type: "local", path: "elsewhere" } },
        { name: "piped", query: "select 1", format: "ndjson", destination: { type: "stdout" } }
      ])
      expect(layouts(config)).toEqual([
        ["orders", true],
        ["orders_items", true],
        ["alone", false],
        ["piped", false]
      ])
    }))

  it.effect("a name continuing another with a date, either order, or differing only in case, is refused", () =>
    Effect.gen(function* () {
      for (const [names, refused] of [
        [["orders", "orders_20250101"], ["exports[1].name"]],
        [["orders_20250101_020000", "orders"], ["exports[1].name"]],
        [["orders", "orders_20250101T020000"], ["exports[1].name"]],
        [["orders", "ORDERS_20250101"], ["exports[1].name"]],
        [["orders", "Orders", "x", "X"], ["exports[1].name", "exports[3].name"]]
      ] as const) {
        expect(yield* collisions(names), names.join(", ")).toEqual(refused)
      }
    }))

  it("kept manifests are told apart by export even when one name starts with another", () => {
    const orders = markerKeys("orders", true)
    expect(orders).toMatchObject({ manifest: "orders.manifest.json", success: "_SUCCESS.orders" })
    expect(markerKeys("orders", false)).toMatchObject({ manifest: "manifest.json", success: "_SUCCESS" })
    expect(orders.kept("orders_20250101T020000.123")).toBe("_manifests/orders_20250101T020000.123.json")
    expect(orders.keptRunId("_manifests/orders_20250101T020000.123.json")).toBe("orders_20250101T020000.123")
    expect(orders.keptRunId("_manifests/orders_20250101T020000.123-0a1f.json")).toBe("orders_20250101T020000.123-0a1f")
    expect(orders.keptRunId("_manifests/orders_items_20250101T020000.123.json")).toBeUndefined()
    expect(orders.keptRunId("_manifests/orders_20250101T020000.123_20250101T020000.123.json")).toBeUndefined()
    expect(orders.keptRunId("orders_20250101T020000.123.json")).toBeUndefined()
  })
})
