import { describe, expect, it } from "vitest"
import { collectAfterReceiving, makeGarbageTrigger } from "../../../src/plugins/formats/thread/garbage.js"

// A WeakRef keeps its target alive until the end of the task that made it or last read it.
const nextTask = () => new Promise((resolve) => setTimeout(resolve, 0))

describe("the reading thread's garbage trigger", () => {
  it("collects once the bytes received pass the chosen amount, and only then", async () => {
    collectAfterReceiving(1000)
    const received = makeGarbageTrigger()
    const ref = new WeakRef({ payload: new Array(1000).fill(0) })
    await nextTask()
    received(600)
    expect(ref.deref()).toBeDefined()
    await nextTask()
    received(600)
    expect(ref.deref()).toBeUndefined()
    expect((globalThis as { gc?: unknown }).gc).toBeUndefined()
  })
})
