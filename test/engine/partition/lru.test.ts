import { describe, expect, it } from "@effect/vitest"
import { LruOpen } from "../../../src/engine/partition/lru.js"

describe("LruOpen", () => {
  it("evicts the least recently used entry only once full, and use refreshes an entry", () => {
    const open = new LruOpen<number>(3)
    expect(open.evictFor()).toBeUndefined()
    open.add("a", 1)
    open.add("b", 2)
    open.add("c", 3)
    expect(open.use("a")).toBe(1)
    expect(open.use("z")).toBeUndefined()
    expect(open.evictFor()).toEqual(["b", 2])
    open.add("d", 4)
    expect(open.size).toBe(3)
    expect(open.evictFor()).toEqual(["c", 3])
    open.add("e", 5)
    open.delete("a")
    expect(open.evictFor()).toBeUndefined()
    expect(open.drain()).toEqual([
      ["d", 4],
      ["e", 5]
    ])
    expect(open.size).toBe(0)
  })

  it("never holds more than its capacity over many keys", () => {
    const open = new LruOpen<number>(8)
    let evicted = 0
    let added = 0
    for (let i = 0; i < 10_000; i++) {
      const key = `k${(i * 7919) % 1000}`
      if (open.use(key) !== undefined) continue
      if (open.evictFor() !== undefined) evicted++
      open.add(key, i)
      added++
      expect(open.size).toBeLessThanOrEqual(8)
    }
    expect(evicted).toBe(added - 8)
    expect(added).toBeGreaterThan(1000)
    expect(open.size).toBe(8)
  })
})
