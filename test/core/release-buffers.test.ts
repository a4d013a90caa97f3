import { describe, expect, it } from "vitest"
import { releaseBuffers } from "../../src/core/release-buffers.js"

describe("releaseBuffers", () => {
  it("frees the buffers at once: they are detached and no longer count as this thread's memory", () => {
    const released = 64 << 20
    const buffers = Array.from({ length: 16 }, () => new Uint8Array(4 << 20).fill(7).buffer)
    const before = process.memoryUsage().arrayBuffers
    releaseBuffers(buffers)
    const after = process.memoryUsage().arrayBuffers
    for (const buffer of buffers) expect(buffer.byteLength).toBe(0)
    // The count is the whole thread's (the test runner's own buffers come and go too), so the drop is asserted as a
    // share of what was released: at least three quarters of 64 MiB. Buffers merely dropped, not released, would
    // still count until a collection, leaving the drop near zero.
    expect(before - after).toBeGreaterThanOrEqual(released * 0.75)
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
