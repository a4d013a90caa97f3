import { describe, expect, it } from "vitest"
import { releaseBuffers } from "../../src/core/release-buffers.js"

describe("releaseBuffers", () => {
  it("frees the buffers at once: they are detached and no longer count as this thread's memory", () => {
    const buffers = Array.from({ length: 4 }, () => new Uint8Array(4 << 20).fill(7).buffer)
    const before = process.memoryUsage().arrayBuffers
    releaseBuffers(buffers)
    for (const buffer of buffers) expect(buffer.byteLength).toBe(0)
    expect(before - process.memoryUsage().arrayBuffers).toBeGreaterThanOrEqual(16 << 20)
  })

  it("leaves what it cannot transfer to the collector: detached, shared and pooled buffers", () => {
    const detached = new ArrayBuffer(8)
    releaseBuffers([detached])
    const shared = new SharedArrayBuffer(8)
    const pooled = Buffer.from("from the pool").buffer
    const empty = new ArrayBuffer(0)
    expect(() => releaseBuffers([detached, shared as unknown as ArrayBuffer, pooled, empty])).not.toThrow()
    expect(shared.byteLength).toBe(8)
    expect(pooled.byteLength).toBeGreaterThan(0)
  })
})
