import { describe, expect, it } from "@effect/vitest"
import { makeFaultTable, seededRandom, transientMix } from "./faults.js"

describe("makeFaultTable", () => {
  it("matches by operation and key pattern, and consumes `times`", () => {
    const table = makeFaultTable()
    table.add({ operation: "UploadPart", keyPattern: /^part\//g, respond: { status: 503 }, times: 2 })
    expect(table.match("PutObject", "part/a")).toBeUndefined()
    expect(table.match("UploadPart", "other")).toBeUndefined()
    expect(table.match("UploadPart", undefined)).toBeUndefined()
    expect(table.match("UploadPart", "part/a")).toEqual({ status: 503 })
    expect(table.match("UploadPart", "part/a")).toEqual({ status: 503 })
    expect(table.match("UploadPart", "part/a")).toBeUndefined()
    expect(table.injected()).toBe(2)
  })

  it("applies `rate` with the injected random source, and `clear` drops every rule", () => {
    const draws = [0.1, 0.9, 0.4]
    const table = makeFaultTable(() => draws.shift() ?? 1)
    table.add({ operation: "*", respond: { reset: true }, rate: 0.5 })
    expect([table.match("GetObject", "k"), table.match("GetObject", "k"), table.match("HeadBucket", undefined)]).toEqual([
      { reset: true },
      undefined,
      { reset: true }
    ])
    table.clear()
    expect(table.match("GetObject", "k")).toBeUndefined()
    expect(table.injected()).toBe(2)
    expect(() => table.add({ respond: { stallMs: 1 }, rate: 2 })).toThrow(RangeError)
  })

  it("a seeded table replays the same faults, picks among listed responses and counts them per kind", () => {
    const run = (seed: number) => {
      const table = makeFaultTable(seededRandom(seed))
      table.add(transientMix(0.1))
      const picked = Array.from({ length: 2_000 }, (_, i) => table.match(i % 2 === 0 ? "UploadPart" : "PutObject", "k"))
      expect(table.match("GetObject", "k")).toBeUndefined()
      return { picked, byKind: table.injectedByKind(), injected: table.injected() }
    }
    const first = run(42)
    expect(run(42)).toEqual(first)
    expect(run(43).picked).not.toEqual(first.picked)
    // ~10 % of 2,000 requests, every kind of the mix drawn, and the per-kind counts add up.
    expect(first.injected).toBeGreaterThan(140)
    expect(first.injected).toBeLessThan(260)
    expect(Object.keys(first.byKind).sort()).toEqual(["500", "503", "InternalError", "SlowDown", "reset", "stall"])
    expect(Object.values(first.byKind).reduce((a, b) => a + b, 0)).toBe(first.injected)
    expect(first.picked.filter((response) => response !== undefined)).toHaveLength(first.injected)
  })

  it("an operation list matches any of its operations", () => {
    const table = makeFaultTable()
    table.add({ operation: ["PutObject", "CompleteMultipartUpload"], respond: { s3Error: "SlowDown" } })
    expect(table.match("UploadPart", "k")).toBeUndefined()
    expect(table.match("CompleteMultipartUpload", "k")).toEqual({ s3Error: "SlowDown" })
    expect(table.injectedByKind()).toEqual({ SlowDown: 1 })
  })
})
