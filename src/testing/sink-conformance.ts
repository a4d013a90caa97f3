import * as assert from "node:assert/strict"
import * as Cause from "effect/Cause"
import * as Chunk from "effect/Chunk"
import * as Deferred from "effect/Deferred"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import type * as Layer from "effect/Layer"
import * as Stream from "effect/Stream"
import type { SinkError } from "../core/errors.js"
import { SinkDriver } from "../core/plugin.js"
import type { SinkDriverShape, UploadHandle } from "../core/plugin.js"
import { releaseBuffers } from "../core/release-buffers.js"
import { blocksOf, bytesOf, concatBytes, differenceOf, shuffled } from "./bytes.js"

/** How the conformance suite reaches the sink under test and looks at the destination behind its back. */
export interface SinkConformanceOptions {
  /** A fresh layer for the destination under test; built once per test. */
  readonly makeLayer: () => Layer.Layer<SinkDriver, SinkError>
  /** The bytes stored under `key` (relative to the destination root), read without the driver; undefined if none. */
  readonly readBack: (key: string) => Promise<Uint8Array | undefined>
  /** Every key under the destination root, read without the driver — include hidden and temporary objects. */
  readonly listKeys: () => Promise<ReadonlyArray<string>>
  /** Multipart uploads still open at the destination, for stores that have such a thing. */
  readonly pendingUploads?: () => Promise<number>
  /** A layer whose destination does not exist (e.g. a missing bucket): `check` must fail with `NotFound`. */
  readonly missingDestinationLayer?: () => Layer.Layer<SinkDriver, SinkError>
  /** Blocks in the large-object tests (default 25, at least 3); lower it for sinks with very large blocks. */
  readonly blockCount?: number
  /** Per-test timeout in milliseconds (default: vitest's `testTimeout`). */
  readonly timeout?: number
}

const listed = (keys: ReadonlyArray<string>, key: string) =>
  assert.ok(keys.includes(key), `${key} is missing from the destination's keys`)

const UNSAFE_KEYS = ["/absolute.bin", "../escape.bin", "nested/../../escape.bin", "back\\slash.bin"]

/** One conformance test: a name and an effect that fails (or dies on a failed assertion) when the sink is wrong. */
export interface SinkConformanceCase {
  readonly name: string
  readonly run: Effect.Effect<void, SinkError>
}

/**
 * The tests every sink must pass, as effects (use {@link runSinkConformance} to register them with vitest). The runtime drives a sink this way: small
 * objects with `put`; large ones with `begin`, `writeBlock` for blocks 0..n-1 (every block but the last exactly
 * `capabilities.blockSize` bytes, up to `capabilities.concurrency` at once, in any order, a failed block written
 * again), then `complete(n)`, or `abort` after a failure or an interruption.
 *
 * The destination must be used by nothing else while the suite runs: the abort tests compare listings taken
 * before and after. Keys are unique per run, so the suite can run again against the same destination.
 */
export const sinkConformanceCases = (options: SinkConformanceOptions): ReadonlyArray<SinkConformanceCase> => {
  const runId = Math.random().toString(36).slice(2, 10)
  const keyFor = (test: string) => `rivet-conformance-${runId}-${test}.bin`
  const blockCount = Math.max(3, options.blockCount ?? 25)
  const cases: Array<SinkConformanceCase> = []
  const test = (name: string, run: Effect.Effect<unknown, SinkError>) => cases.push({ name, run: Effect.asVoid(run) })

  const withSink = <A>(
    body: (sink: SinkDriverShape) => Effect.Effect<A, SinkError>
  ): Effect.Effect<A, SinkError> =>
    Effect.suspend(() => Effect.flatMap(SinkDriver, body).pipe(Effect.provide(options.makeLayer())))

  const readBack = (key: string) => Effect.promise(() => options.readBack(key))
  const listKeys = Effect.promise(() => options.listKeys()).pipe(Effect.map((keys) => [...keys].sort()))
  const pendingUploads = Effect.promise(async () => (options.pendingUploads ? options.pendingUploads() : 0))

  const expectStored = (key: string, expected: Uint8Array) =>
    Effect.map(readBack(key), (actual) => {
      assert.notEqual(actual, undefined, `nothing stored under ${key}`)
      const difference = differenceOf(actual ?? new Uint8Array(0), expected)
      assert.equal(difference, undefined, `the object under ${key} differs from what was written: ${difference}`)
    })

  const writeAll = (
    handle: UploadHandle,
    blocks: ReadonlyArray<Uint8Array>,
    order: ReadonlyArray<number>,
    concurrency: number
  ) => Effect.forEach(order, (index) => handle.writeBlock(index, blocks[index]!), { concurrency, discard: true })

  const inOrder = (count: number) => Array.from({ length: count }, (_, index) => index)

  test(
    "put stores the bytes under the key",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("put")
        const bytes = bytesOf(1, 100_000)
        yield* sink.put(key, bytes, "application/octet-stream")
        yield* expectStored(key, bytes)
        listed(yield* listKeys, key)
      })
    )
  )

  test(
    "put of zero bytes stores an empty object",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("empty")
        yield* sink.put(key, new Uint8Array(0), "application/octet-stream")
        yield* expectStored(key, new Uint8Array(0))
        listed(yield* listKeys, key)
      })
    )
  )

  test(
    "a second write to a key replaces the object",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("overwrite")
        yield* sink.put(key, bytesOf(2, 5_000), "application/octet-stream")
        const blocks = blocksOf(3, sink.capabilities.blockSize, 3)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* writeAll(handle, blocks, inOrder(3), 1)
        yield* handle.complete(3)
        yield* expectStored(key, concatBytes(blocks))
      })
    )
  )

  test(
    `${blockCount} blocks written in order round-trip`,
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("blocks-in-order")
        const blocks = blocksOf(4, sink.capabilities.blockSize, blockCount)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* writeAll(handle, blocks, inOrder(blockCount), 1)
        yield* handle.complete(blockCount)
        yield* expectStored(key, concatBytes(blocks))
      })
    )
  )

  test(
    `${blockCount} blocks written out of order, capabilities.concurrency at once, round-trip`,
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("blocks-shuffled")
        const blocks = blocksOf(5, sink.capabilities.blockSize, blockCount)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* writeAll(handle, blocks, shuffled(inOrder(blockCount), 6), sink.capabilities.concurrency)
        yield* handle.complete(blockCount)
        yield* expectStored(key, concatBytes(blocks))
      })
    )
  )

  // A copy of `bytes` handed to `call` and detached (freed, as the runtime frees its buffers) as soon as it returns.
  const freedAfter = (bytes: Uint8Array, call: (given: Uint8Array) => Effect.Effect<void, SinkError>) =>
    Effect.suspend(() => {
      const given = bytes.slice()
      return Effect.tap(call(given), () => Effect.sync(() => releaseBuffers([given.buffer])))
    })

  test(
    "with capabilities.releasesBytes, bytes freed as soon as put or writeBlock returns are stored whole",
    withSink((sink) =>
      Effect.gen(function* () {
        // The claim is optional; a sink that does not make it keeps whatever it needs.
        if (sink.capabilities.releasesBytes !== true) return
        const small = bytesOf(11, 5_000)
        yield* freedAfter(small, (given) => sink.put(keyFor("released-put"), given, "application/octet-stream"))
        yield* expectStored(keyFor("released-put"), small)
        const key = keyFor("released-blocks")
        const blocks = blocksOf(12, sink.capabilities.blockSize, 3)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* Effect.forEach(inOrder(3), (index) => freedAfter(blocks[index]!, (given) => handle.writeBlock(index, given)), {
          concurrency: sink.capabilities.concurrency,
          discard: true
        })
        yield* handle.complete(3)
        yield* expectStored(key, concatBytes(blocks))
      })
    )
  )

  test(
    "writing a block again (a retry) gives the same object",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("retried-block")
        const blocks = blocksOf(7, sink.capabilities.blockSize, 3)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* writeAll(handle, blocks, [0, 1, 1, 2, 2, 0], 1)
        yield* handle.complete(3)
        yield* expectStored(key, concatBytes(blocks))
      })
    )
  )

  test(
    "nothing is visible under the key before complete",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("invisible")
        const blocks = blocksOf(8, sink.capabilities.blockSize, 3)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* writeAll(handle, blocks, inOrder(3), 1)
        assert.equal(yield* readBack(key), undefined, `an object is visible under ${key}`)
        assert.ok(!(yield* listKeys).includes(key), `${key} is listed before complete`)
        yield* handle.complete(3)
        yield* expectStored(key, concatBytes(blocks))
      })
    )
  )

  test(
    "abort leaves nothing behind, and a second abort is harmless",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("aborted")
        const keysBefore = yield* listKeys
        const pendingBefore = yield* pendingUploads
        const blocks = blocksOf(9, sink.capabilities.blockSize, 3)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* writeAll(handle, blocks, [0, 1], 1)
        yield* handle.abort
        yield* handle.abort
        assert.equal(yield* readBack(key), undefined, `an object is visible under ${key}`)
        assert.deepEqual(yield* listKeys, keysBefore, "the keys differ from those before the upload")
        assert.equal(yield* pendingUploads, pendingBefore, "multipart uploads are left open")
      })
    )
  )

  test(
    "complete again, and abort after complete, keep the object",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("settled")
        const blocks = blocksOf(15, sink.capabilities.blockSize, 3)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* writeAll(handle, blocks, inOrder(3), 1)
        yield* handle.complete(3)
        yield* handle.complete(3)
        yield* handle.abort
        yield* expectStored(key, concatBytes(blocks))
      })
    )
  )

  test(
    "complete with a block never written fails, and the abort that follows leaves nothing behind",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("gap")
        const keysBefore = yield* listKeys
        const blocks = blocksOf(16, sink.capabilities.blockSize, 3)
        const handle = yield* sink.begin(key, "application/octet-stream")
        yield* writeAll(handle, blocks, [0, 2], 1)
        const completed = yield* Effect.either(handle.complete(3))
        assert.equal(Either.isLeft(completed) && completed.left._tag, "SinkError", "complete(3) with block 1 missing")
        yield* handle.abort
        assert.equal(yield* readBack(key), undefined, `an object is visible under ${key}`)
        assert.deepEqual(yield* listKeys, keysBefore, "the keys differ from those before the upload")
      })
    )
  )

  // The runtime aborts from the finalizer of the scope the writes ran in; the test does the same by hand
  // once the writing fiber is interrupted (blocks may still be in flight in the sink at that moment).
  test(
    "an interrupted upload, then aborted as the runtime does, leaves nothing behind",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = keyFor("interrupted")
        const keysBefore = yield* listKeys
        const pendingBefore = yield* pendingUploads
        const blocks = blocksOf(10, sink.capabilities.blockSize, blockCount)
        const handle = yield* sink.begin(key, "application/octet-stream")
        const twoWritten = yield* Deferred.make<void>()
        let written = 0
        const writer = yield* Effect.fork(
          Effect.forEach(
            inOrder(blockCount),
            (index) =>
              handle.writeBlock(index, blocks[index]!).pipe(
                Effect.zipRight(Effect.sync(() => ++written)),
                Effect.tap((count) => (count === 2 ? Deferred.succeed(twoWritten, undefined) : Effect.void))
              ),
            { concurrency: sink.capabilities.concurrency, discard: true }
          ).pipe(Effect.zipRight(Effect.never))
        )
        yield* Deferred.await(twoWritten)
        yield* Fiber.interrupt(writer)
        yield* handle.abort
        assert.equal(yield* readBack(key), undefined, `an object is visible under ${key}`)
        assert.deepEqual(yield* listKeys, keysBefore, "the keys differ from those before the upload")
        assert.equal(yield* pendingUploads, pendingBefore, "multipart uploads are left open")
      })
    )
  )

  test(
    "keys with / create nested objects",
    withSink((sink) =>
      Effect.gen(function* () {
        const small = `rivet-conformance-${runId}/a/b/put.bin`
        const large = `rivet-conformance-${runId}/x/y/z/blocks.bin`
        const bytes = bytesOf(11, 1_000)
        const blocks = blocksOf(12, sink.capabilities.blockSize, 3)
        yield* sink.put(small, bytes, "application/octet-stream")
        const handle = yield* sink.begin(large, "application/octet-stream")
        yield* writeAll(handle, blocks, inOrder(3), 1)
        yield* handle.complete(3)
        yield* expectStored(small, bytes)
        yield* expectStored(large, concatBytes(blocks))
        const keys = yield* listKeys
        listed(keys, small)
        listed(keys, large)
      })
    )
  )

  test(
    "absolute keys, `..` segments and backslashes are rejected with a SinkError",
    withSink((sink) =>
      Effect.forEach(UNSAFE_KEYS, (key) =>
        Effect.gen(function* () {
          const put = yield* Effect.either(sink.put(key, bytesOf(13, 10), "application/octet-stream"))
          assert.equal(Either.isLeft(put) && put.left._tag, "SinkError", `put(${JSON.stringify(key)})`)
          const begin = yield* Effect.either(sink.begin(key, "application/octet-stream"))
          assert.equal(Either.isLeft(begin) && begin.left._tag, "SinkError", `begin(${JSON.stringify(key)})`)
        })
      )
    )
  )

  test(
    "list and read, where the sink offers them, see what was written",
    withSink((sink) =>
      Effect.gen(function* () {
        const key = `rivet-conformance-${runId}/listed/object.bin`
        const bytes = bytesOf(14, 70_000)
        yield* sink.put(key, bytes, "application/octet-stream")
        if (sink.list) {
          const entry = (yield* sink.list).find((object) => object.key === key)
          assert.equal(entry?.size, bytes.length, `list() entry for ${key}`)
        }
        if (sink.read) {
          const chunks = yield* Stream.runCollect(sink.read(key))
          const difference = differenceOf(concatBytes(Chunk.toReadonlyArray(chunks)), bytes)
          assert.equal(difference, undefined, `read(${key}) differs from what was written: ${difference}`)
        }
      })
    )
  )

  test("check passes", withSink((sink) => sink.check))

  const missing = options.missingDestinationLayer
  if (missing) {
    test(
      "check on a missing destination fails with reason NotFound",
      Effect.suspend(() => Effect.flatMap(SinkDriver, (sink) => sink.check).pipe(Effect.provide(missing()))).pipe(
        Effect.either,
        Effect.map((result) => {
          assert.ok(Either.isLeft(result), "check succeeded on the missing destination")
          assert.equal(result.left.reason, "NotFound", "the reason check gives for a missing destination")
        })
      )
    )
  }
  return cases
}

/**
 * The test functions of the runner the suite registers with. Vitest's and Jest's `describe` and `it` fit as they
 * are; passing them in (rather than importing a runner here) keeps the suite on the caller's copy of the runner.
 */
export interface TestRegistrar {
  readonly describe: (name: string, body: () => void) => void
  readonly it: (name: string, body: () => Promise<void>, timeout?: number) => void
}

/** Runs one case with the live clock (a sink may use timers); a failure throws what failed (assertion or error). */
const runCase = (testCase: SinkConformanceCase): Promise<void> =>
  Effect.runPromiseExit(testCase.run).then((exit) => {
    if (Exit.isFailure(exit)) throw Cause.squash(exit.cause)
  })

/**
 * Registers `describe(name)` with the conformance tests (see {@link sinkConformanceCases}) on the runner given:
 * `runSinkConformance("my sink", options, { describe, it })` with `describe` and `it` from vitest.
 */
export const runSinkConformance = (name: string, options: SinkConformanceOptions, runner: TestRegistrar): void =>
  runner.describe(name, () => {
    for (const testCase of sinkConformanceCases(options))
      runner.it(testCase.name, () => runCase(testCase), options.timeout)
  })
