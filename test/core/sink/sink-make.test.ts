import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { SinkError } from "../../../src/core/errors.js"
import { SinkDriver } from "../../../src/core/plugin.js"
import * as Sink from "../../../src/core/sink/index.js"
import type { RawUpload, SinkPrimitives, UsageProblem } from "../../../src/core/sink/index.js"
import { runSinkConformance } from "../../../src/testing/index.js"

const usageError = (problem: UsageProblem) =>
  new SinkError({
    plugin: "test",
    operation: problem.operation,
    key: problem.key,
    reason: problem.reason,
    retryable: false,
    message: problem.message,
    ...(problem.hint === undefined ? {} : { hint: problem.hint })
  })

/** A store that can only write whole objects: `Sink.make` buffers the blocks of `begin` and writes them with one put. */
const putOnlyStore = () => {
  const objects = new Map<string, Uint8Array>()
  const puts: Array<string> = []
  const driver = Sink.make({
    spanPrefix: "PutOnlySink",
    label: "PutOnly",
    uri: (key) => `put-only:${key ?? ""}`,
    capabilities: { markers: true, blockSize: 1024, concurrency: 3 },
    usageError,
    probe: { remove: (key) => Effect.sync(() => void objects.delete(key)) },
    put: (key, bytes) =>
      Effect.sync(() => {
        puts.push(key)
        objects.set(key, bytes.slice())
      }),
    list: Effect.sync(() => [...objects].map(([key, bytes]) => ({ key, size: bytes.length })))
  })
  return { objects, puts, driver }
}

const bufferedStore = putOnlyStore()
runSinkConformance("a put-only store through Sink.make's buffered begin", {
  makeLayer: () => Layer.succeed(SinkDriver, bufferedStore.driver),
  readBack: async (key) => bufferedStore.objects.get(key),
  listKeys: async () => [...bufferedStore.objects.keys()],
  blockCount: 5
}, { describe, it })

/** A raw upload that records what the framework forwards to it. */
const recordingStore = (overrides: Partial<SinkPrimitives<string>> = {}) => {
  const calls: Array<string> = []
  const completed: Array<ReadonlyArray<string>> = []
  const raw = (key: string): RawUpload<string> => ({
    writePart: (index) => Effect.sync(() => (calls.push(`writePart ${key} ${index}`), `receipt-${index}`)),
    complete: (receipts, size) =>
      Effect.sync(() => {
        calls.push(`complete ${key} ${size}`)
        completed.push(receipts)
      }),
    abort: Effect.sync(() => void calls.push(`abort ${key}`))
  })
  const driver = Sink.make<string>({
    spanPrefix: "RecordingSink",
    label: "Recording",
    uri: (key) => `recording:${key ?? ""}`,
    capabilities: { markers: true, blockSize: 4, concurrency: 2 },
    usageError,
    probe: false,
    put: (key) => Effect.sync(() => void calls.push(`put ${key}`)),
    begin: (key) => Effect.sync(() => (calls.push(`begin ${key}`), raw(key))),
    ...overrides
  })
  return { calls, completed, driver }
}

const bytes = (length: number) => new Uint8Array(length).fill(7)

describe("Sink.make", () => {
  it.effect("keeps the receipts and completes once with them in block order; abort after complete is not forwarded", () =>
    Effect.gen(function* () {
      const store = recordingStore()
      const upload = yield* store.driver.begin("a.bin", "application/octet-stream")
      yield* upload.writeBlock(2, bytes(1))
      yield* upload.writeBlock(0, bytes(4))
      yield* upload.writeBlock(1, bytes(4))
      yield* upload.complete(3)
      yield* upload.complete(3)
      yield* upload.abort
      expect(store.completed).toEqual([["receipt-0", "receipt-1", "receipt-2"]])
      expect(store.calls.filter((call) => call.startsWith("complete") || call.startsWith("abort"))).toEqual([
        "complete a.bin 9"
      ])
      const late = yield* Effect.flip(upload.writeBlock(3, bytes(1)))
      expect(late).toMatchObject({ reason: "Conflict", message: "the upload was already completed" })
    })
  )

  it.effect("refuses a missing, an extra or a short block at complete without calling the store", () =>
    Effect.gen(function* () {
      const store = recordingStore()
      const gap = yield* store.driver.begin("gap.bin", "application/octet-stream")
      yield* gap.writeBlock(1, bytes(2))
      expect((yield* Effect.flip(gap.complete(2))).message).toBe("block 0 of 2 was never written")
      yield* gap.writeBlock(0, bytes(3))
      expect((yield* Effect.flip(gap.complete(2))).message).toBe(
        "block 0 is 3 bytes; every block but the last must be 4 bytes"
      )
      expect((yield* Effect.flip(gap.complete(1))).message).toBe("block 1 was written but the object has 1 blocks")
      expect((yield* Effect.flip(gap.writeBlock(0, bytes(5)))).message).toBe(
        "block 0 is 5 bytes, more than the block size: it exceeds 4 bytes"
      )
      yield* gap.abort
      yield* gap.abort
      expect(store.completed).toEqual([])
      expect(store.calls.filter((call) => call.startsWith("abort"))).toEqual(["abort gap.bin"])
      expect((yield* Effect.flip(gap.complete(2))).message).toBe("the upload was already aborted")
    })
  )

  it.effect("checks keys before any primitive sees them, with the store's own extra rule", () =>
    Effect.gen(function* () {
      const store = recordingStore({ keyProblem: (key) => (key.length > 10 ? "the key is longer than 10 characters" : undefined) })
      const refused = yield* Effect.flip(store.driver.put("../up.bin", bytes(1), "application/octet-stream"))
      expect(refused).toMatchObject({ operation: "put", key: "../up.bin", reason: "Unknown" })
      expect(refused.message).toBe('invalid key "../up.bin": the key contains a `..` segment')
      const long = yield* Effect.flip(store.driver.begin("a-very-long-key.bin", "application/octet-stream"))
      expect(long.message).toBe('invalid key "a-very-long-key.bin": the key is longer than 10 characters')
      expect(store.calls).toEqual([])
    })
  )

  it.effect("enforces the store's part limit with its hint, and the in-order rule of streams", () =>
    Effect.gen(function* () {
      const limited = recordingStore({ uploads: { maxParts: { count: 2, hint: "raise the block size" } } })
      const upload = yield* limited.driver.begin("big.bin", "application/octet-stream")
      expect(yield* Effect.flip(upload.writeBlock(2, bytes(1)))).toMatchObject({
        message: "block 2 is beyond the destination's limit of 2 parts per object",
        hint: "raise the block size"
      })
      const stream = recordingStore({ uploads: { inOrder: true } })
      const ordered = yield* stream.driver.begin("s.bin", "application/octet-stream")
      expect((yield* Effect.flip(ordered.writeBlock(1, bytes(4)))).message).toBe(
        "blocks must come in order: expected block 0, got 1"
      )
      yield* ordered.writeBlock(0, bytes(4))
      yield* ordered.writeBlock(0, bytes(4))
      expect(stream.calls.filter((call) => call.startsWith("writePart"))).toEqual(["writePart s.bin 0"])
      expect((yield* Effect.flip(ordered.complete(2))).message).toBe("cannot complete after 1 blocks: 2 were announced")
    })
  )

  it.effect("doctor: reachability first, then the probe written and removed; a failed removal is not a failure", () =>
    Effect.gen(function* () {
      const store = putOnlyStore()
      yield* store.driver.check
      expect(store.puts).toEqual([Sink.PROBE_NAME])
      expect(store.objects.size).toBe(0)
      const order: Array<string> = []
      const stubborn = Sink.make({
        spanPrefix: "StubbornSink",
        label: "Stubborn",
        uri: () => "stubborn:",
        capabilities: { markers: true, blockSize: 4, concurrency: 1 },
        usageError,
        check: Effect.sync(() => void order.push("reachable")),
        probe: {
          remove: (key) =>
            Effect.fail(usageError({ operation: "check", key, message: "delete is not allowed", reason: "Unknown" }))
        },
        put: (key) => Effect.sync(() => void order.push(`put ${key}`)),
        list: Effect.succeed([
          { key: Sink.PROBE_NAME, size: 2 },
          { key: "kept.csv", size: 1 }
        ])
      })
      yield* stubborn.check
      expect(order).toEqual(["reachable", `put ${Sink.PROBE_NAME}`])
      expect(yield* stubborn.list!).toEqual([{ key: "kept.csv", size: 1 }])
    })
  )

  it.effect("a store error reaches the caller as the store made it, cause included", () =>
    Effect.gen(function* () {
      const cause = new Error("socket hang up")
      const failure = new SinkError({
        plugin: "test",
        operation: "put",
        reason: "Unavailable",
        retryable: true,
        message: "the store is down",
        cause
      })
      const store = recordingStore({ put: () => Effect.fail(failure) })
      const error = yield* Effect.flip(store.driver.put("a.bin", bytes(1), "application/octet-stream"))
      expect(error).toMatchObject({ _tag: "SinkError", plugin: "test", reason: "Unavailable", message: "the store is down" })
      expect(error.cause === cause).toBe(true)
    })
  )
})

describe("SinkError", () => {
  it("keeps the cause, and a worker thread sends it as its text", () => {
    const cause = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:9"), { code: "ECONNREFUSED" })
    const error = new SinkError({ plugin: "test", operation: "put", reason: "Unavailable", retryable: true, message: "down", cause })
    expect(error.cause).toBe(cause)
    expect(Schema.encodeSync(SinkError)(error).cause).toBe("connect ECONNREFUSED 127.0.0.1:9")
  })
})
