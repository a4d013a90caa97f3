import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import { type BatchSchema, makeBatch, type Value } from "../../../src/core/batch.js"
import { QualityGates } from "../../../src/engine/quality/gates.js"
import { UniqueCounter } from "../../../src/engine/quality/unique.js"

// A retried chunk or page counts into gates of its own (`child`), folded in only when the attempt succeeds (`fold(child.tally())`):
// the failed attempt's values must not come back as duplicates, nor its rows and NULLs in the ratios.

const schema: BatchSchema = {
  columns: [
    { name: "id", type: { kind: "int64" } },
    { name: "note", type: { kind: "string" } }
  ]
}
/** Rows from..to-1; every 4th note is NULL. */
const batch = (from: number, to: number) => {
  const ids: Array<Value> = []
  const notes: Array<Value> = []
  for (let id = from; id < to; id++) {
    ids.push(BigInt(id))
    notes.push(id % 4 === 0 ? null : `n${id}`)
  }
  return makeBatch(schema, [ids, notes])
}
const verdict = (gates: QualityGates, rows: number) => Effect.runSync(Effect.either(gates.verdict(schema, rows)))

describe("QualityGates child/tally/fold", () => {
  it("a failed attempt's child is dropped: the retried unit reports no duplicates and the NULL ratio of what was written", () => {
    const gates = new QualityGates("h1_gates_unit", { unique_columns: ["id"], null_ratio_max: { note: 0.25 } })
    const failed = gates.child()
    failed.observe(batch(0, 100))
    failed.observe(makeBatch(schema, [[100n, 101n], [null, null]])) // a NULL-heavy tail it never finished
    failed.close()
    const retried = gates.child()
    retried.observe(batch(0, 100))
    gates.fold(retried.tally())
    const next = gates.child()
    next.observe(batch(100, 200))
    gates.fold(next.tally())
    expect(Either.isRight(verdict(gates, 200))).toBe(true)
  })

  it("folded children add up: a value repeated across units is a duplicate, NULLs count against every row", () => {
    const gates = new QualityGates("h1_gates_unit", { unique_columns: ["id"], null_ratio_max: { note: 0.2 } })
    for (const [from, to] of [
      [0, 100],
      [99, 200]
    ] as const) {
      const child = gates.child()
      child.observe(batch(from, to))
      gates.fold(child.tally())
    }
    const result = verdict(gates, 201)
    if (Either.isRight(result)) throw new Error("the gates passed")
    expect(result.left.message).toContain("column 'id': 1 duplicate value(s) among 201 rows")
    expect(result.left.message).toContain("column 'note': NULL ratio 0.2488 exceeds 0.2")
  })
})

describe("UniqueCounter.adopt", () => {
  it("takes over a child's spilled runs and in-memory values; closing the child afterwards removes nothing it gave", () => {
    const parent = new UniqueCounter(4)
    for (const value of ["a", "b", "c", "d", "e"]) parent.add(value) // one spilled run + one value in memory
    const child = new UniqueCounter(4)
    for (const value of ["f", "g", "h", "i", "j", "a"]) child.add(value) // a spilled run, two in memory, "a" again
    parent.adopt(child)
    child.close()
    const discarded = new UniqueCounter(4)
    for (const value of ["b", "c", "d", "e", "f"]) discarded.add(value)
    discarded.close()
    parent.add("k")
    expect(parent.duplicates()).toBe(1)
  })
})
