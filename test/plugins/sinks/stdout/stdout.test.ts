import { spawn } from "node:child_process"
import { PassThrough } from "node:stream"
import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Fiber from "effect/Fiber"
import * as Option from "effect/Option"
import * as Schema from "effect/Schema"
import { StdoutConfig } from "../../../../src/plugins/sinks/stdout/config.js"
import { makeStdoutDriver, STDOUT_BLOCK_SIZE } from "../../../../src/plugins/sinks/stdout/driver.js"
import stdoutSink from "../../../../src/plugins/sinks/stdout/index.js"

const encode = (text: string) => new TextEncoder().encode(text)
const block = (fill: number, size = STDOUT_BLOCK_SIZE) => new Uint8Array(size).fill(fill)

/** Everything written to a PassThrough, consumed as it arrives. */
const collecting = () => {
  const stream = new PassThrough()
  const chunks: Array<Buffer> = []
  stream.on("data", (chunk: Buffer) => chunks.push(chunk))
  return { stream, bytes: () => Buffer.concat(chunks) }
}

describe("stdout sink", () => {
  it.scoped("writes put objects and blocks in order, ignoring a retried block that already went out", () =>
    Effect.gen(function* () {
      const out = collecting()
      const sink = yield* makeStdoutDriver(out.stream)
      expect(sink.label).toBe("Stdout")
      expect(sink.uri("any/key.csv")).toBe("stdout:")
      expect(sink.capabilities).toEqual({ markers: false, blockSize: STDOUT_BLOCK_SIZE, concurrency: 1 })
      yield* sink.check
      yield* sink.put("header.csv", encode("id\n"), "text/csv")
      const handle = yield* sink.begin("rows.csv", "text/csv")
      yield* handle.writeBlock(0, block(1))
      yield* handle.writeBlock(0, block(1))
      yield* handle.writeBlock(1, encode("tail"))
      yield* handle.complete(2)
      yield* handle.abort
      const expected = Buffer.concat([Buffer.from("id\n"), block(1), Buffer.from("tail")])
      expect(out.bytes().equals(expected)).toBe(true)
    })
  )

  it.scoped("refuses blocks out of order and a complete with a wrong count", () =>
    Effect.gen(function* () {
      const out = collecting()
      const sink = yield* makeStdoutDriver(out.stream)
      const handle = yield* sink.begin("rows.csv", "text/csv")
      const skipped = yield* Effect.flip(handle.writeBlock(1, block(2)))
      expect(skipped.message).toContain("expected block 0, got 1")
      yield* handle.writeBlock(0, block(2))
      expect((yield* Effect.flip(handle.complete(2))).message).toContain("after 1 blocks")
      expect(out.bytes().length).toBe(STDOUT_BLOCK_SIZE)
    })
  )

  it.scoped("waits for 'drain' while the reader is slow, then carries on", () =>
    Effect.gen(function* () {
      // Nobody reads yet: a 64 KiB block overfills the 1 KiB buffers, so the write must wait.
      const stream = new PassThrough({ highWaterMark: 1024 })
      const sink = yield* makeStdoutDriver(stream)
      const handle = yield* sink.begin("rows.csv", "text/csv")
      const first = yield* Effect.fork(handle.writeBlock(0, block(3)))
      for (let spins = 0; stream.writableLength === 0 && spins < 10_000; spins++) yield* Effect.yieldNow()
      expect(stream.writableLength).toBeGreaterThan(0)
      expect(Option.isNone(yield* Fiber.poll(first))).toBe(true)

      const received: Array<Buffer> = []
      stream.on("data", (chunk: Buffer) => received.push(chunk))
      yield* Fiber.join(first)
      yield* handle.writeBlock(1, encode("end"))
      yield* handle.complete(2)
      expect(Buffer.concat(received).equals(Buffer.concat([block(3), Buffer.from("end")]))).toBe(true)
    })
  )

  it.scoped("a reader that exits (EPIPE) gives a clean, non-retryable SinkError", () =>
    Effect.gen(function* () {
      // A real pipe whose reader exits after the first chunk, like `rivet run | head -c 1`.
      const reader = spawn(process.execPath, ["-e", "process.stdin.once('data', () => process.exit(0))"], {
        stdio: ["pipe", "ignore", "ignore"]
      })
      const exited = Effect.async<void>((resume) => {
        if (reader.exitCode !== null) return resume(Effect.void)
        reader.once("exit", () => resume(Effect.void))
      })
      const sink = yield* makeStdoutDriver(reader.stdin)
      const handle = yield* sink.begin("rows.csv", "text/csv")
      yield* handle.writeBlock(0, block(4))
      yield* exited
      const error = yield* Effect.flip(
        Effect.forEach([1, 2, 3, 4], (index) => handle.writeBlock(index, block(5)), { discard: true }).pipe(
          Effect.zipRight(handle.complete(5))
        )
      )
      expect(error).toMatchObject({
        _tag: "SinkError",
        plugin: "stdout",
        reason: "Unavailable",
        retryable: false,
        message: "stdout was closed by the reader"
      })
      expect(error.hint).toContain("head")
      // The failure sticks: later operations report it too instead of writing into a dead pipe.
      expect((yield* Effect.flip(sink.put("more.csv", encode("x"), "text/csv"))).message).toBe(
        "stdout was closed by the reader"
      )
      expect(Either.isLeft(yield* Effect.either(sink.check))).toBe(true)
    })
  )

  it.scoped("a destroyed stream fails the write instead of hanging", () =>
    Effect.gen(function* () {
      const stream = new PassThrough()
      const sink = yield* makeStdoutDriver(stream)
      stream.destroy()
      const error = yield* Effect.flip(sink.put("a.csv", encode("x"), "text/csv"))
      expect(error.message).toBe("stdout was closed by the reader")
    })
  )

  it("takes no config keys", () => {
    const decode = Schema.decodeUnknownEither(StdoutConfig, { onExcessProperty: "error" })
    expect(Either.isRight(decode({}))).toBe(true)
    expect(Either.isLeft(decode({ path: "out" }))).toBe(true)
    expect(stdoutSink.type).toBe("stdout")
  })
})
