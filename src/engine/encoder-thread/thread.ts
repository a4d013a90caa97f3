import * as Effect from "effect/Effect"
import * as Queue from "effect/Queue"
import { existsSync } from "node:fs"
import { availableParallelism } from "node:os"
import { fileURLToPath } from "node:url"
import { Worker } from "node:worker_threads"
import { describeCause, FormatError } from "../../core/errors.js"
import type { EncoderInit, FromEncoder } from "./protocol.js"

/**
 * The thread's entry: `encoder-worker.js` beside this module in dist/, and `dist/bundle/encoder-worker.js` beside the
 * CLI's bundled chunks (scripts/bundle-cli.mjs names the entry so). Run from sources (vitest) there is none.
 */
const WORKER_URL = new URL("./encoder-worker.js", import.meta.url)
/**
 * The encoder thread's values live in ArrayBuffers outside the JS heap, so a small young generation costs it no
 * time: on bench_2m (Parquet) 8 MiB instead of V8's default saves ~20 MB of peak RSS at the same speed (4 MiB:
 * ~30 MB, a little slower).
 */
const YOUNG_GENERATION_MB = 8

/**
 * Whether this process can give an export an encoder thread: a second core, and the built thread entry (run from
 * sources, as in unit tests, there is no .js entry beside this module).
 */
export const encoderThreadsAvailable = (): boolean => availableParallelism() > 1 && existsSync(fileURLToPath(WORKER_URL))

/** A started encoder thread and the inbox of each part it encodes. */
export interface EncoderThread {
  readonly worker: Worker
  readonly parts: Map<number, Queue.Queue<FromEncoder>>
  stopped: string | undefined
  nextPart: number
}

export const threadStopped = (format: string, reason: string) =>
  new FormatError({
    format,
    message: `the ${format} encoder thread stopped (${reason})`,
    hint: "run again; if it recurs, run with --no-encoder-thread (encoderThread: false in code) to encode on the reading thread, and report the issue"
  })

/** What a part waiting on a thread that stopped is told. */
export const stoppedReply = (format: string, part: number, reason: string): FromEncoder => {
  const error = threadStopped(format, reason)
  return { _tag: "Failed", part, message: error.message, hint: error.hint }
}

/** Starts a thread for `init`'s format; a thread that errs or exits fails every part still waiting on it. */
export const startThread = (init: EncoderInit): Effect.Effect<EncoderThread, FormatError> =>
  Effect.try({
    try: () => {
      const worker = new Worker(WORKER_URL, {
        workerData: init,
        resourceLimits: { maxYoungGenerationSizeMb: YOUNG_GENERATION_MB }
      })
      const thread: EncoderThread = { worker, parts: new Map(), stopped: undefined, nextPart: 0 }
      worker.on("message", (message: FromEncoder) => {
        const inbox = thread.parts.get(message.part)
        if (inbox !== undefined) Queue.unsafeOffer(inbox, message)
      })
      const stop = (reason: string) => {
        if (thread.stopped !== undefined) return
        thread.stopped = reason
        for (const [part, inbox] of thread.parts) Queue.unsafeOffer(inbox, stoppedReply(init.format, part, reason))
      }
      worker.on("error", (error) => stop(describeCause(error)))
      worker.on("exit", (code) => stop(`it exited with code ${code}`))
      return thread
    },
    catch: (cause) => threadStopped(init.format, `it could not be started: ${describeCause(cause)}`)
  })
