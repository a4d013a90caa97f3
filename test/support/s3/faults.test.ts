import { describe, expect, it } from "@effect/vitest"
import { makeFaultTable } from "./faults.js"

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
})
