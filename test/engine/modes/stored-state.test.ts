import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Schema from "effect/Schema"
import { describe, expect, it } from "vitest"
import { StateError } from "../../../src/core/errors.js"
import { decodeStored } from "../../../src/engine/modes/stored.js"
import { ChunkSpec } from "../../../src/engine/plan/model.js"

const decodeChunk = decodeStored(ChunkSpec, "orders", "chunk range")

describe("state a mode stored, read back", () => {
  it("decodes what the mode wrote", async () => {
    for (const spec of [{ low: "1", high: "100000" }, { nulls: true as const }]) {
      expect(await Effect.runPromise(decodeChunk(JSON.stringify(spec)))).toEqual(spec)
    }
  })

  it.each([
    ["not JSON", "{low: 1"],
    ["a number where text belongs", JSON.stringify({ low: 1, high: 2 })],
    ["neither a range nor the NULL chunk", JSON.stringify({ nulls: false })]
  ])("refuses %s with a StateError naming the export and what was stored", async (_, text) => {
    const exit = await Effect.runPromiseExit(decodeChunk(text))
    expect(Exit.isFailure(exit)).toBe(true)
    const error = Exit.isFailure(exit) ? exit.cause : undefined
    const failure = error && error._tag === "Fail" ? error.error : undefined
    expect(failure).toBeInstanceOf(StateError)
    expect(failure?.message).toMatch(/^export 'orders': the stored chunk range cannot be read: /)
    expect(failure?.hint).toContain("rivet state reset -e orders")
  })

  it("works for any schema, e.g. a page's last key", async () => {
    const decodeKey = decodeStored(Schema.Array(Schema.String), "events", "last key of page 3")
    expect(await Effect.runPromise(decodeKey('["2024-01-01T00:00:00Z","42"]'))).toEqual(["2024-01-01T00:00:00Z", "42"])
    const exit = await Effect.runPromiseExit(decodeKey("[null]"))
    expect(Exit.isFailure(exit)).toBe(true)
  })
})
