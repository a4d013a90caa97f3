import { describe, expect, it } from "@effect/vitest"
import * as Chunk from "effect/Chunk"
import * as Effect from "effect/Effect"
import * as Stream from "effect/Stream"
import { batchToRows, makeBatch } from "../../src/core/batch.js"
import type { BatchSchema } from "../../src/core/batch.js"
import { SinkError, SourceError } from "../../src/core/errors.js"
import { SinkDriver, SourceDriver } from "../../src/core/plugin.js"
import type { SourceQuery } from "../../src/core/plugin.js"
import { memorySink, memorySource, runSinkConformance } from "../../src/testing/index.js"

const shared = memorySink({ blockSize: 4096, concurrency: 3 })

runSinkConformance("memory sink conformance", {
  makeLayer: () => shared.layer,
  readBack: async (key) => shared.objects().get(key),
  listKeys: async () => [...shared.objects().keys()],
  pendingUploads: async () => shared.pendingUploads(),
  missingDestinationLayer: () =>
    memorySink({
      failWith: (call) =>
        call.operation === "check"
          ? new SinkError({
              plugin: "memory",
              operation: "check",
              reason: "NotFound",
              message: "no such destination",
              retryable: false
            })
          : undefined
    }).layer
}, { describe, it })

const schema: BatchSchema = {
  columns: [
    { name: "id", type: { kind: "int64" } },
    { name: "name", type: { kind: "string" } }
  ]
}

const query = (overrides: Partial<SourceQuery> = {}): SourceQuery => ({
  exportName: "users",
  base: { _tag: "Query", sql: "SELECT * FROM users" },
  batchSize: 2,
  columnTypes: new Map(),
  ...overrides
})

describe("memorySource", () => {
  it.effect("cuts rows into batches of the query's batch size, filling missing values with null", () =>
    Effect.gen(function* () {
      const source = memorySource({ schema, rows: [{ id: 1n, name: "a" }, { id: 2n }, { id: 3n, name: "c" }] })
      const driver = yield* Effect.provide(SourceDriver, source.layer)
      const result = yield* driver.open(query())
      const batches = Chunk.toReadonlyArray(yield* Stream.runCollect(result.batches))
      expect(result.schema).toEqual(schema)
      expect(batches.map((batch) => batch.rowCount)).toEqual([2, 1])
      expect(batches.flatMap(batchToRows)).toEqual([
        { id: 1n, name: "a" },
        { id: 2n, name: null },
        { id: 3n, name: "c" }
      ])
      expect(source.queries().map((q) => q.exportName)).toEqual(["users"])
    }).pipe(Effect.scoped)
  )

  it.effect("looks tables up by table name, else export name, and names the known ones when missing", () =>
    Effect.gen(function* () {
      const orders = makeBatch(schema, [[10n], ["order"]])
      const source = memorySource({ tables: { orders: { batches: [orders] }, users: { schema, rows: [] } } })
      const driver = yield* Effect.provide(SourceDriver, source.layer)
      const byTable = yield* driver.open(query({ base: { _tag: "Table", name: "orders" } }))
      expect(Chunk.toReadonlyArray(yield* Stream.runCollect(byTable.batches))).toEqual([orders])
      const byExport = yield* driver.open(query())
      expect(Chunk.size(yield* Stream.runCollect(byExport.batches))).toBe(0)
      const missing = yield* Effect.flip(driver.open(query({ exportName: "nope" })))
      expect(missing.message).toContain("nope")
      expect(missing.message).toContain("orders, users")
    }).pipe(Effect.scoped)
  )

  it.effect("fails the stream after failAfterBatches batches", () =>
    Effect.gen(function* () {
      const error = new SourceError({ source: "memory", message: "connection lost", retryable: true })
      const rows = [{ id: 1n, name: "a" }, { id: 2n, name: "b" }, { id: 3n, name: "c" }]
      const source = memorySource({ schema, rows }, { failAfterBatches: 1, error })
      const driver = yield* Effect.provide(SourceDriver, source.layer)
      const result = yield* driver.open(query())
      const seen: Array<number> = []
      const failure = yield* Effect.flip(Stream.runForEach(result.batches, (b) => Effect.sync(() => seen.push(b.rowCount))))
      expect(seen).toEqual([2])
      expect(failure).toBe(error)
    }).pipe(Effect.scoped)
  )
})

describe("memorySink", () => {
  it.effect("refuses a complete whose blocks break the contract", () =>
    Effect.gen(function* () {
      const sink = memorySink({ blockSize: 4 })
      const driver = yield* Effect.provide(SinkDriver, sink.layer)
      const short = yield* driver.begin("short.bin", "application/octet-stream")
      yield* short.writeBlock(0, new Uint8Array(3))
      yield* short.writeBlock(1, new Uint8Array(2))
      expect((yield* Effect.flip(short.complete(2))).message).toContain("block 0 is 3 bytes")
      const gap = yield* driver.begin("gap.bin", "application/octet-stream")
      yield* gap.writeBlock(1, new Uint8Array(2))
      expect((yield* Effect.flip(gap.complete(2))).message).toContain("block 0 of 2 was never written")
      expect((yield* Effect.flip(gap.writeBlock(2, new Uint8Array(5)))).message).toContain("exceeds 4 bytes")
      yield* short.abort
      yield* gap.abort
      expect(sink.objects().size).toBe(0)
      expect(sink.pendingUploads()).toBe(0)
    })
  )

  it.effect("injects failures and records every call", () =>
    Effect.gen(function* () {
      let failures = 1
      const sink = memorySink({
        failWith: (call) =>
          call.operation === "put" && failures-- > 0
            ? new SinkError({ plugin: "memory", operation: "put", reason: "Unavailable", message: "503", retryable: true })
            : undefined
      })
      const driver = yield* Effect.provide(SinkDriver, sink.layer)
      const bytes = new TextEncoder().encode("hello")
      expect((yield* Effect.flip(driver.put("a.txt", bytes, "text/plain"))).retryable).toBe(true)
      expect(sink.objects().has("a.txt")).toBe(false)
      yield* driver.put("a.txt", bytes, "text/plain")
      expect(sink.objects().get("a.txt")).toEqual(bytes)
      expect(sink.calls()).toEqual([
        { operation: "put", key: "a.txt" },
        { operation: "put", key: "a.txt" }
      ])
    })
  )

  it.effect("the plugin's layer shares the sink's objects", () =>
    Effect.gen(function* () {
      const sink = memorySink()
      expect(sink.plugin.kind).toBe("sink")
      expect(sink.plugin.type).toBe("memory")
      const layer = sink.plugin.make({}, { configDir: ".", env: {} })
      const driver = yield* Effect.provide(SinkDriver, layer)
      yield* driver.put("x/y.bin", new Uint8Array([1, 2, 3]), "application/octet-stream")
      expect([...sink.objects().keys()]).toEqual(["x/y.bin"])
    })
  )
})
