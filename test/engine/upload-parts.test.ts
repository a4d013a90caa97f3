import { createHash } from "node:crypto"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Exit from "effect/Exit"
import * as Fiber from "effect/Fiber"
import * as Stream from "effect/Stream"
import type { PartPiece } from "../../src/engine/encode-parts.js"
import { SinkError } from "../../src/core/errors.js"
import type { SinkDriverShape, UploadHandle } from "../../src/core/plugin.js"
import { handOver } from "../../src/core/owned-bytes.js"
import { abortPendingUploads, UploadLedger } from "../../src/engine/upload-cleanup.js"
import { uploadParts } from "../../src/engine/upload-parts.js"

/** A recording sink: objects become visible only on put/complete; blocks can be made to fail. */
const recordingSink = (options: {
  blockSize: number
  concurrency: number
  releasesBytes?: boolean
  failBlock?: (key: string, index: number, attempt: number) => SinkError | undefined
  failAbort?: (attempt: number) => SinkError | undefined
}) => {
  const visible = new Map<string, Uint8Array>()
  const log: Array<string> = []
  const attempts = new Map<string, number>()
  const sink: SinkDriverShape = {
    label: "Recording",
    uri: (key) => `mem://${key ?? ""}`,
    capabilities: { markers: true, blockSize: options.blockSize, concurrency: options.concurrency, releasesBytes: options.releasesBytes === true },
    check: Effect.void,
    put: (key, bytes) => Effect.sync(() => { log.push(`put ${key}`); visible.set(key, bytes.slice()) }),
    begin: (key) =>
      Effect.sync((): UploadHandle => {
        log.push(`begin ${key}`)
        const blocks = new Map<number, Uint8Array>()
        return {
          writeBlock: (index, bytes) =>
            Effect.suspend(() => {
              const id = `${key}#${index}`
              const attempt = (attempts.get(id) ?? 0) + 1
              attempts.set(id, attempt)
              const failure = options.failBlock?.(key, index, attempt)
              if (failure) return Effect.fail(failure)
              blocks.set(index, bytes.slice())
              return Effect.void
            }),
          complete: (count) =>
            Effect.sync(() => {
              log.push(`complete ${key} ${count}`)
              const parts = Array.from({ length: count }, (_, i) => blocks.get(i)!)
              visible.set(key, Buffer.concat(parts))
            }),
          abort: Effect.suspend(() => {
            log.push(`abort ${key}`)
            const failure = options.failAbort?.(log.filter((line) => line === `abort ${key}`).length)
            return failure ? Effect.fail(failure) : Effect.void
          })
        }
      })
  }
  return { sink, visible, log }
}

const pieces = (parts: ReadonlyArray<ReadonlyArray<string>>): Stream.Stream<PartPiece> =>
  Stream.fromIterable(
    parts.flatMap((chunks, part): Array<PartPiece> => [
      ...chunks.map((text) => ({ _tag: "bytes" as const, part, bytes: new TextEncoder().encode(text) })),
      { _tag: "end" as const, part, rows: chunks.length }
    ])
  )

const encode = (text: string) => new TextEncoder().encode(text)
/** The byte length of each array's buffer: 0 once the buffer was freed (detached). */
const bufferSizes = (...arrays: ReadonlyArray<Uint8Array>) => arrays.map((array) => array.buffer.byteLength)

/** One part made of `chunks` as they are (views and buffers kept). */
const partOf = (chunks: ReadonlyArray<Uint8Array>): Stream.Stream<PartPiece> =>
  Stream.fromIterable<PartPiece>([
    ...chunks.map((bytes) => ({ _tag: "bytes" as const, part: 0, bytes })),
    { _tag: "end" as const, part: 0, rows: chunks.length }
  ])

/** `sink`, telling `seen` of every block written through `begin`, before the block goes on. */
const watchingBlocks = (sink: SinkDriverShape, seen: (key: string, index: number, bytes: Uint8Array) => void): SinkDriverShape => ({
  ...sink,
  begin: (key, contentType) =>
    Effect.map(sink.begin(key, contentType), (handle) => ({
      ...handle,
      writeBlock: (index: number, bytes: Uint8Array) => {
        seen(key, index, bytes)
        return handle.writeBlock(index, bytes)
      }
    }))
})

const options = (sink: SinkDriverShape) => ({
  sink,
  contentType: "text/plain",
  keyOf: (part: number) => `part${part}`,
  retry: { maxRetries: 3, initialDelay: "1 millis", maxDelay: "2 millis" } as const,
  exportName: "t",
  onRetry: Effect.void,
  onCommitted: () => Effect.void,
  onBytes: () => Effect.void
})

describe("uploadParts", () => {
  it.scoped("writes small parts with put and large ones block by block, hashing the exact bytes", () =>
    Effect.gen(function* () {
      const { sink, visible, log } = recordingSink({ blockSize: 4, concurrency: 3 })
      const records = yield* uploadParts(pieces([["abc"], ["hello ", "world", "!!"]]), options(sink))
      expect(new TextDecoder().decode(visible.get("part0"))).toBe("abc")
      expect(new TextDecoder().decode(visible.get("part1"))).toBe("hello world!!")
      expect(log).toEqual(["put part0", "begin part1", "complete part1 4"])
      expect(records).toEqual([
        { path: "part0", rows: 1, size_bytes: 3, content_fingerprint: `sha256:${createHash("sha256").update("abc").digest("hex")}` },
        {
          path: "part1",
          rows: 3,
          size_bytes: 13,
          content_fingerprint: `sha256:${createHash("sha256").update("hello world!!").digest("hex")}`
        }
      ])
    }))

  it.scoped("cuts chunks of any size into exact blocks: views inside a chunk, copies across chunks", () =>
    Effect.gen(function* () {
      const { sink, visible, log } = recordingSink({ blockSize: 4, concurrency: 2 })
      const sizes: Record<string, Array<number>> = {}
      const recording = watchingBlocks(sink, (key, index, bytes) => void ((sizes[key] ??= [])[index] = bytes.length))
      const chunks = ["", "a", "bcdefghij", "k", "lm", "", "nopqrstu", "v", "wxyz0123456789", "!"]
      const records = yield* uploadParts(pieces([chunks]), options(recording))
      const text = chunks.join("")
      expect(new TextDecoder().decode(visible.get("part0"))).toBe(text)
      expect(sizes["part0"]).toEqual([4, 4, 4, 4, 4, 4, 4, 4, 4, 1])
      expect(log).toEqual(["begin part0", "complete part0 10"])
      expect(records[0]?.content_fingerprint).toBe(`sha256:${createHash("sha256").update(text).digest("hex")}`)
    }))

  it.scoped("joins chunks that lie back to back in one buffer: a block across them is a view, not a copy", () =>
    Effect.gen(function* () {
      const { sink, visible } = recordingSink({ blockSize: 4, concurrency: 1 })
      const shared = encode("abcdefghijklmnopXY")
      const other = encode("123")
      const viewed: Array<boolean> = []
      const recording = watchingBlocks(sink, (_key, index, bytes) => void (viewed[index] = bytes.buffer === shared.buffer))
      // abc|defgh|ijkl back to back; mnop skipped (a gap in the same buffer); then XY, and bytes of another buffer.
      const chunks = [shared.subarray(0, 3), shared.subarray(3, 8), shared.subarray(8, 12), shared.subarray(16, 18), other]
      yield* uploadParts(partOf(chunks), options(recording))
      expect(new TextDecoder().decode(visible.get("part0"))).toBe("abcdefghijklXY123")
      // abcd, efgh, ijkl: views of the shared buffer across its chunks; XY12 spans two buffers; 3 is the rest.
      expect(viewed).toEqual([true, true, true, false, false])
    }))

  it.scoped("frees the runtime's own buffers once every byte of them is copied into blocks, and no others", () =>
    Effect.gen(function* () {
      const { sink, visible } = recordingSink({ blockSize: 4, concurrency: 1 })
      const copiedWhole = encode("abc")
      const viewed = encode("defgh")
      const sharedBuffer = encode("ij_kl")
      const [firstHalf, secondHalf] = [sharedBuffer.subarray(0, 2), sharedBuffer.subarray(3, 5)]
      const notOwned = encode("mno")
      handOver([copiedWhole, viewed, firstHalf, secondHalf])
      yield* uploadParts(partOf([copiedWhole, viewed, firstHalf, secondHalf, notOwned]), options(sink))
      // Blocks: abc+d (copied), efgh (a view of "defgh"), ij+kl (copied, one buffer), mno.
      expect(new TextDecoder().decode(visible.get("part0"))).toBe("abcdefghijklmno")
      expect(bufferSizes(copiedWhole, sharedBuffer, viewed, notOwned)).toEqual([0, 0, 5, 3])
    }))

  it.scoped("with a sink that releases what it is given, frees written blocks it made and owned buffers once written", () =>
    Effect.gen(function* () {
      const { sink, visible } = recordingSink({ blockSize: 4, concurrency: 2, releasesBytes: true })
      const given: Array<Uint8Array> = []
      const recording = watchingBlocks(sink, (_key, index, bytes) => void (given[index] = bytes))
      const copiedWhole = encode("abc")
      const viewed = encode("defgh")
      const notOwned = encode("mno")
      handOver([copiedWhole, viewed])
      yield* uploadParts(partOf([copiedWhole, viewed, notOwned]), options(recording))
      expect(new TextDecoder().decode(visible.get("part0"))).toBe("abcdefghmno")
      // Block 0 (abc+d) was made by copying: freed once written; "defgh" was copied (d) and viewed (efgh), then
      // written: freed; "mno" (the last block, a view) is not the runtime's to free.
      expect(bufferSizes(...given)).toEqual([0, 0, 3])
      expect(bufferSizes(copiedWhole, viewed, notOwned)).toEqual([0, 0, 3])
    }))

  it.scoped("frees a buffer handed over only after its first bytes arrived, once all of them are written", () =>
    Effect.gen(function* () {
      const { sink, visible } = recordingSink({ blockSize: 4, concurrency: 1, releasesBytes: true })
      // A source cutting chunks from one buffer hands it over once it cuts no more from it (rendered.ts).
      const slab = encode("abcdefghij??")
      const piece = (from: number, to: number): PartPiece => ({ _tag: "bytes", part: 0, bytes: slab.subarray(from, to) })
      const stream = Stream.make(piece(0, 3), piece(3, 7)).pipe(
        Stream.concat(Stream.fromEffect(Effect.sync(() => (handOver([slab.subarray(0, 10)]), piece(7, 10))))),
        Stream.concat(Stream.make<Array<PartPiece>>({ _tag: "end", part: 0, rows: 3 }))
      )
      yield* uploadParts(stream, options(sink))
      expect(new TextDecoder().decode(visible.get("part0"))).toBe("abcdefghij")
      expect(slab.buffer.byteLength).toBe(0)
    }))

  // Live clock: the retry policy really sleeps between attempts.
  it.live("retries a block that fails with a retryable error", () =>
    Effect.gen(function* () {
      const transient = new SinkError({ plugin: "rec", operation: "writeBlock", reason: "Unavailable", message: "503", retryable: true })
      const { sink, visible } = recordingSink({
        blockSize: 2,
        concurrency: 2,
        failBlock: (_key, index, attempt) => (index === 1 && attempt < 3 ? transient : undefined)
      })
      let retries = 0
      yield* Effect.scoped(uploadParts(pieces([["abcdef"]]), { ...options(sink), onRetry: Effect.sync(() => void retries++) }))
      expect(new TextDecoder().decode(visible.get("part0"))).toBe("abcdef")
      expect(retries).toBe(2)
    }))

  it.effect("aborts the open upload and publishes nothing when a block fails for good", () =>
    Effect.gen(function* () {
      const denied = new SinkError({ plugin: "rec", operation: "writeBlock", reason: "PermissionDenied", message: "no", retryable: false })
      const { sink, visible, log } = recordingSink({ blockSize: 2, concurrency: 1, failBlock: (_k, index) => (index === 2 ? denied : undefined) })
      const exit = yield* Effect.exit(Effect.scoped(uploadParts(pieces([["abcdefgh"]]), options(sink))))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(visible.size).toBe(0)
      expect(log).toEqual(["begin part0", "abort part0"])
    }))

  it.effect("aborts the open upload when the byte stream fails mid-part", () =>
    Effect.gen(function* () {
      const { sink, visible, log } = recordingSink({ blockSize: 2, concurrency: 2 })
      const failing = Stream.concat(
        pieces([["abcdefgh"]]).pipe(Stream.take(1)),
        Stream.fail("source broke")
      )
      const exit = yield* Effect.exit(Effect.scoped(uploadParts(failing, options(sink))))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(visible.size).toBe(0)
      expect(log).toEqual(["begin part0", "abort part0"])
    }))

  // Live clock: the retry policy really sleeps between attempts.
  it.live("retries an abort that fails with a retryable error, so no multipart upload is left behind", () =>
    Effect.gen(function* () {
      const transient = new SinkError({ plugin: "rec", operation: "abort", reason: "Unavailable", message: "503", retryable: true })
      const { sink, visible, log } = recordingSink({ blockSize: 2, concurrency: 1, failAbort: (attempt) => (attempt <= 2 ? transient : undefined) })
      const failing = Stream.concat(pieces([["abcdefgh"]]).pipe(Stream.take(1)), Stream.fail("source broke"))
      const exit = yield* Effect.exit(Effect.scoped(uploadParts(failing, options(sink))))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(visible.size).toBe(0)
      expect(log).toEqual(["begin part0", "abort part0", "abort part0", "abort part0"])
    }))
})

/**
 * A store like S3 multipart: `begin` creates a pending upload before it answers, so a lost answer (`loseBegin`) or
 * an interrupted `begin` (`hangBegin`) leaves an upload no handle knows. `pendingUploads` lists and aborts them.
 */
const pendingStore = (options: { loseBegin?: number; hangBegin?: boolean }) => {
  const pending = new Map<string, string>()
  const visible = new Map<string, Uint8Array>()
  const log: Array<string> = []
  let begins = 0
  const lost = new SinkError({ plugin: "store", operation: "begin", reason: "Unavailable", message: "socket hang up", retryable: true })
  const sink: SinkDriverShape = {
    label: "Store",
    uri: (key) => `store://${key ?? ""}`,
    capabilities: { markers: true, blockSize: 2, concurrency: 1 },
    check: Effect.void,
    put: (key, bytes) => Effect.sync(() => void visible.set(key, bytes)),
    begin: (key) =>
      Effect.suspend(() => {
        const id = `u${++begins}`
        pending.set(id, key)
        log.push(`begin ${key} ${id}`)
        if (options.hangBegin) return Effect.never
        if (begins <= (options.loseBegin ?? 0)) return Effect.fail(lost)
        const blocks = new Map<number, Uint8Array>()
        const handle: UploadHandle = {
          writeBlock: (index, bytes) => Effect.sync(() => void blocks.set(index, bytes.slice())),
          complete: (count) =>
            Effect.sync(() => {
              pending.delete(id)
              visible.set(key, Buffer.concat(Array.from({ length: count }, (_, i) => blocks.get(i)!)))
            }),
          abort: Effect.sync(() => void pending.delete(id))
        }
        return Effect.succeed(handle)
      }),
    pendingUploads: {
      list: (keyPrefix) =>
        Effect.sync(() => {
          log.push(`list ${keyPrefix}`)
          return [...pending].filter(([, key]) => key.startsWith(keyPrefix)).map(([id, key]) => ({ key, id }))
        }),
      abort: (upload) => Effect.sync(() => void (log.push(`abort ${upload.id}`), pending.delete(upload.id)))
    }
  }
  return { sink, pending, visible, log }
}

describe("uploadParts: uploads a lost or interrupted begin left", () => {
  it.live("a begin whose answer was lost is retried; once the part is complete the lost upload is aborted", () =>
    Effect.gen(function* () {
      const { sink, pending, visible, log } = pendingStore({ loseBegin: 2 })
      const begun: Array<string> = []
      yield* Effect.scoped(uploadParts(pieces([["abcdef"]]), { ...options(sink), onBegin: (key) => Effect.sync(() => void begun.push(key)) }))
      expect(new TextDecoder().decode(visible.get("part0"))).toBe("abcdef")
      expect(pending.size).toBe(0)
      expect(log).toEqual(["begin part0 u1", "begin part0 u2", "begin part0 u3", "list part0", "abort u1", "abort u2"])
      expect(begun).toEqual(["part0"])
    }))

  it.effect("a clean begin lists nothing", () =>
    Effect.gen(function* () {
      const { sink, pending, log } = pendingStore({})
      yield* Effect.scoped(uploadParts(pieces([["abcdef"], ["ghijkl"]]), options(sink)))
      expect(pending.size).toBe(0)
      expect(log).toEqual(["begin part0 u1", "begin part1 u2"])
    }))

  it.live("a begin interrupted in flight: its upload is found and aborted when the scope closes", () =>
    Effect.gen(function* () {
      const { sink, pending, log } = pendingStore({ hangBegin: true })
      const fiber = yield* Effect.fork(Effect.scoped(uploadParts(pieces([["abcdef"]]), options(sink))))
      while (pending.size === 0) yield* Effect.sleep("5 millis")
      yield* Fiber.interrupt(fiber)
      expect(pending.size).toBe(0)
      expect(log).toEqual(["begin part0 u1", "list part0", "abort u1"])
    }))

  it.live("a begin that keeps failing: the uploads it created are aborted with the failed unit", () =>
    Effect.gen(function* () {
      const { sink, pending, visible } = pendingStore({ loseBegin: 100 })
      const exit = yield* Effect.exit(Effect.scoped(uploadParts(pieces([["abcdef"]]), options(sink))))
      expect(Exit.isFailure(exit)).toBe(true)
      expect(visible.size).toBe(0)
      expect(pending.size).toBe(0)
    }))
})

describe("abortPendingUploads / UploadLedger", () => {
  it.effect("lists once under the shared prefix and aborts only what the ledger covers", () =>
    Effect.gen(function* () {
      const { sink, pending, log } = pendingStore({})
      for (const [id, key] of [["a", "orders_1_chunk0_n1.csv"], ["b", "orders_1_chunk1_n2_p0.csv"], ["c", "orders_1_chunk10_zz.csv"], ["d", "orders_x.csv"]]) {
        pending.set(id!, key!)
      }
      const ledger = new UploadLedger()
      ledger.notePrefix("orders_1_chunk0_n1")
      ledger.notePrefix("orders_1_chunk1_n2")
      expect(ledger.listingPrefix()).toBe("orders_1_chunk")
      const aborted = yield* abortPendingUploads(sink, ledger.listingPrefix(), (key) => ledger.covers(key), options(sink).retry)
      expect(aborted).toEqual(["orders_1_chunk0_n1.csv", "orders_1_chunk1_n2_p0.csv"])
      expect([...pending.keys()]).toEqual(["c", "d"])
      expect(log).toEqual(["list orders_1_chunk", "abort a", "abort b"])
    }))
})
