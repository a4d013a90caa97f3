import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Layer from "effect/Layer"
import { SinkDriver } from "../../src/core/plugin.js"
import type { SinkDriverShape, UploadHandle } from "../../src/core/plugin.js"
import { memorySink, runSinkConformance, sinkConformanceCases } from "../../src/testing/index.js"
import type { MemorySink, SinkConformanceOptions, TestRegistrar } from "../../src/testing/index.js"

/** The suite must catch broken sinks: each is a memory sink with one contract violation. */

const optionsFor = (store: MemorySink, driver: SinkDriverShape): SinkConformanceOptions => ({
  makeLayer: () => Layer.succeed(SinkDriver, driver),
  readBack: async (key) => store.objects().get(key),
  listKeys: async () => [...store.objects().keys()],
  pendingUploads: async () => store.pendingUploads(),
  blockCount: 6
})

const failedCases = (options: SinkConformanceOptions) =>
  Effect.gen(function* () {
    const failed: Array<string> = []
    for (const testCase of sinkConformanceCases(options)) {
      if (Exit.isFailure(yield* Effect.exit(testCase.run))) failed.push(testCase.name)
    }
    return failed
  })

describe("sink conformance suite", () => {
  it.live("passes a correct sink", () =>
    Effect.gen(function* () {
      const store = memorySink({ blockSize: 1024, concurrency: 2 })
      expect(yield* failedCases(optionsFor(store, store.driver))).toEqual([])
    })
  )

  it.live("catches objects visible before complete and aborts that leave them behind", () =>
    Effect.gen(function* () {
      const store = memorySink({ blockSize: 1024 })
      const leaky: SinkDriverShape = {
        ...store.driver,
        begin: (key, contentType) =>
          Effect.map(store.driver.begin(key, contentType), (handle): UploadHandle => ({
            ...handle,
            writeBlock: (index, bytes) =>
              Effect.zipRight(handle.writeBlock(index, bytes), store.driver.put(key, bytes, contentType))
          }))
      }
      const failed = yield* failedCases(optionsFor(store, leaky))
      expect(failed).toContain("nothing is visible under the key before complete")
      expect(failed).toContain("abort leaves nothing behind, and a second abort is harmless")
      expect(failed).toContain("an interrupted upload, then aborted as the runtime does, leaves nothing behind")
    })
  )

  it.live("catches blocks stored in arrival order instead of by index", () =>
    Effect.gen(function* () {
      const store = memorySink({ blockSize: 1024 })
      const appending: SinkDriverShape = {
        ...store.driver,
        begin: (key, contentType) =>
          Effect.sync((): UploadHandle => {
            const chunks: Array<Uint8Array> = []
            return {
              writeBlock: (_index, bytes) => Effect.sync(() => void chunks.push(bytes)),
              complete: () => {
                const whole = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0))
                chunks.reduce((offset, c) => (whole.set(c, offset), offset + c.length), 0)
                return store.driver.put(key, whole, contentType)
              },
              abort: Effect.void
            }
          })
      }
      const failed = yield* failedCases(optionsFor(store, appending))
      expect(failed).toContain("6 blocks written out of order, capabilities.concurrency at once, round-trip")
      expect(failed).toContain("writing a block again (a retry) gives the same object")
      expect(failed).not.toContain("6 blocks written in order round-trip")
    })
  )

  it.live("catches a sink that claims to release the bytes it is given but keeps the arrays", () =>
    Effect.gen(function* () {
      const store = memorySink({ blockSize: 1024 })
      const kept = new Map<string, Uint8Array>()
      const keeping: SinkDriverShape = {
        ...store.driver,
        capabilities: { ...store.driver.capabilities, releasesBytes: true },
        put: (key, bytes) => Effect.sync(() => void kept.set(key, bytes))
      }
      const failed = yield* failedCases({ ...optionsFor(store, keeping), readBack: async (key) => kept.get(key) ?? store.objects().get(key) })
      expect(failed).toContain("with capabilities.releasesBytes, bytes freed as soon as put or writeBlock returns are stored whole")
      // Without the claim, keeping the arrays is allowed.
      const honest = { ...keeping, capabilities: { ...keeping.capabilities, releasesBytes: false } }
      const failedHonest = yield* failedCases({ ...optionsFor(store, honest), readBack: async (key) => kept.get(key) ?? store.objects().get(key) })
      expect(failedHonest).not.toContain("with capabilities.releasesBytes, bytes freed as soon as put or writeBlock returns are stored whole")
    })
  )

  it.live("catches unsafe keys that are accepted", () =>
    Effect.gen(function* () {
      const store = memorySink()
      const trusting: SinkDriverShape = {
        ...store.driver,
        put: (key, bytes, contentType) =>
          key.includes("..") ? Effect.void : store.driver.put(key, bytes, contentType)
      }
      const failed = yield* failedCases(optionsFor(store, trusting))
      expect(failed).toEqual(["absolute keys, `..` segments and backslashes are rejected with a SinkError"])
    })
  )

  it.live("checks the missing destination only when one is given, and requires NotFound", () =>
    Effect.gen(function* () {
      const store = memorySink()
      const base = optionsFor(store, store.driver)
      const name = "check on a missing destination fails with reason NotFound"
      expect(sinkConformanceCases(base).map((c) => c.name)).not.toContain(name)
      const reachable = { ...base, missingDestinationLayer: () => Layer.succeed(SinkDriver, store.driver) }
      expect(yield* failedCases(reachable)).toEqual([name])
    })
  )

  it("registers its cases on the runner it is given, and a failing case throws the assertion that did not hold", async () => {
    const store = memorySink()
    const trusting: SinkDriverShape = {
      ...store.driver,
      put: (key, bytes, contentType) => (key.includes("..") ? Effect.void : store.driver.put(key, bytes, contentType))
    }
    const suites: Array<string> = []
    const cases = new Map<string, { readonly body: () => Promise<void>; readonly timeout: number | undefined }>()
    const registrar: TestRegistrar = {
      describe: (name, body) => {
        suites.push(name)
        body()
      },
      it: (name, body, timeout) => cases.set(name, { body, timeout })
    }
    runSinkConformance("trusting sink", { ...optionsFor(store, trusting), timeout: 5_000 }, registrar)
    expect(suites).toEqual(["trusting sink"])
    expect([...cases.keys()]).toEqual(sinkConformanceCases(optionsFor(store, trusting)).map((c) => c.name))
    expect(cases.get("check passes")?.timeout).toBe(5_000)
    await expect(cases.get("put stores the bytes under the key")!.body()).resolves.toBeUndefined()
    await expect(cases.get("absolute keys, `..` segments and backslashes are rejected with a SinkError")!.body()).rejects.toThrow(
      /put\("\.\.\/escape\.bin"\)/
    )
  })
})
