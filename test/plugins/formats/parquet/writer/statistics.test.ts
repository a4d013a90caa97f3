import { describe, expect, it } from "@effect/vitest"
import * as fc from "fast-check"
import { makeBatch } from "../../../../../src/core/batch.js"
import { bytesMinMax } from "../../../../../src/plugins/formats/parquet/writer/statistics.js"

const compare = (a: Uint8Array, b: Uint8Array): number => {
  for (let k = 0; k < Math.min(a.length, b.length); k++) if (a[k] !== b[k]) return a[k]! - b[k]!
  return a.length - b.length
}

// Values that share long prefixes, differ inside a four-byte word or in the tail, are prefixes of each other, and
// hold bytes ≥ 0x80 (unsigned order): where comparing four bytes at a time could go wrong.
const value = fc
  .tuple(fc.constantFrom("", "cust", "customer ", "customer 1", "\u00ff\u00ff\u00ff"), fc.uint8Array({ maxLength: 9 }))
  .map(([prefix, tail]) => Uint8Array.from([...new TextEncoder().encode(prefix), ...tail]))

describe("parquet statistics of byte columns", () => {
  it("min and max are the bytewise smallest and largest value of every range, NULLs skipped", () => {
    fc.assert(
      fc.property(fc.array(fc.option(value, { freq: 5 }), { minLength: 1, maxLength: 60 }), fc.nat(), (values, cut) => {
        const column = makeBatch({ columns: [{ name: "b", type: { kind: "bytes" } }] }, [values]).columns[0]!
        const split = cut % (values.length + 1)
        const bounds = bytesMinMax()
        bounds.add(column, undefined, 0, split)
        bounds.add(column, undefined, split, values.length)
        const present = values.flatMap((v) => (v === null ? [] : [v])).sort(compare)
        if (present.length === 0) {
          expect(bounds.result()).toEqual({})
          return
        }
        // Values here are at most 18 bytes; those past 16 come back shortened (writer.test.ts pins that rule).
        const { min, max } = bounds.result()
        expect([...min!]).toEqual([...present[0]!.slice(0, 16)])
        if (present.at(-1)!.length <= 16) expect([...max!]).toEqual([...present.at(-1)!])
        else expect(compare(max!, present.at(-1)!.slice(0, 16))).toBeGreaterThan(0)
      }),
      { numRuns: 2000 }
    )
  })

  it("UUIDs (fixed width) order bytewise too", () => {
    const uuids = ["80808080-8080-8080-8080-808080808080", "7f7f7f7f-7f7f-7f7f-7f7f-7f7f7f7f7f7f", "80808080-8080-8080-8080-808080808081"]
    const column = makeBatch({ columns: [{ name: "u", type: { kind: "uuid" } }] }, [uuids]).columns[0]!
    const bounds = bytesMinMax()
    bounds.add(column, undefined, 0, 3)
    expect([...bounds.result().min!]).toEqual(Array<number>(16).fill(0x7f))
    expect([...bounds.result().max!]).toEqual([...Array<number>(15).fill(0x80), 0x81])
  })
})
