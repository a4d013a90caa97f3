import { setFlagsFromString } from "node:v8"
import { runInNewContext } from "node:vm"

/**
 * V8's full collection, obtained without `--expose-gc` on the command line: the flag is set only while a fresh
 * context is made, so no other context (the caller's, a later worker's) gets a global `gc`.
 */
const fullCollection = (): (() => void) => {
  const global = (globalThis as { gc?: unknown }).gc
  if (typeof global === "function") return global as () => void
  setFlagsFromString("--expose-gc")
  try {
    return runInNewContext("gc") as () => void
  } finally {
    setFlagsFromString("--no-expose-gc")
  }
}

let everyBytes: number | undefined

/**
 * Has the reading thread collect its garbage once every `bytes` of encoded output received from encoder threads (the
 * CLI's choice; the library leaves its host's collector alone). Those buffers are dropped by this thread once the
 * sink has written them, and V8 collects on its own only after 64 MB of such memory: on NDJSON the reading thread
 * held ~20 MB more at its peak without this (docs/benchmarks.md, "Memory, session of 2026-12-05").
 */
export const collectAfterReceiving = (bytes: number): void => {
  everyBytes = bytes
}

/** Counts bytes received from another thread; runs a full collection each time they pass the chosen amount. */
export const makeGarbageTrigger = (): ((bytes: number) => void) => {
  let collect: (() => void) | undefined
  let since = 0
  return (bytes) => {
    if (everyBytes === undefined) return
    since += bytes
    if (since < everyBytes) return
    since = 0
    collect ??= fullCollection()
    collect()
  }
}
