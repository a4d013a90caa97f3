import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import { type BatchSchema, makeBatch } from "../../../src/core/batch.js"
import { csvPartOpener } from "../../../src/plugins/formats/csv/encoder.js"
import { ndjsonPartOpener } from "../../../src/plugins/formats/ndjson/encoder.js"

/** The text encoders refuse a batch that does not fit the schema their part was opened with, naming what differs. */
const schema: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }, { name: "name", type: { kind: "string" } }] }
const narrow: BatchSchema = { columns: [{ name: "id", type: { kind: "int64" } }] }
const mistyped: BatchSchema = { columns: [{ name: "id", type: { kind: "int32" } }, { name: "name", type: { kind: "string" } }] }

describe.each([
  ["csv", csvPartOpener],
  ["ndjson", ndjsonPartOpener]
] as const)("%s part", (_, open) => {
  it.effect("refuses a batch with another number of columns", () =>
    Effect.gen(function* () {
      const encoder = yield* open(schema)
      const error = yield* Effect.flip(encoder.write(makeBatch(narrow, [[1n]])))
      expect(error.message).toContain("a batch has 1 columns but the part was opened with 2")
    })
  )

  it.effect("refuses a batch whose column data does not fit its type", () =>
    Effect.gen(function* () {
      const encoder = yield* open(schema)
      const error = yield* Effect.flip(encoder.write({ ...makeBatch(mistyped, [[1], ["a"]]), schema }))
      expect(error.message).toContain('column "id" (int64) does not fit its type')
      expect(error.hint).toContain("does not match its schema")
    })
  )
})
