import * as Effect from "effect/Effect"
import type { SinkError } from "../errors.js"
import type { UploadHandle } from "../plugin.js"
import type { RawUpload, SinkOperation, UploadRules } from "./primitives.js"
import { perPart } from "../span-options.js"

/** What the state machine needs besides the raw upload. */
export interface GuardOptions {
  readonly key: string
  readonly blockSize: number
  readonly rules: UploadRules
  readonly spanPrefix: string
  readonly fail: (operation: SinkOperation, message: string, options?: { hint?: string | undefined; conflict?: boolean }) => SinkError
}

interface Part<Receipt> {
  readonly receipt: Receipt
  readonly size: number
}

const defaultDescribePart = (index: number, count: number) => `block ${index} of ${count}`

/** What is wrong with the parts written so far for `complete(count)`, if anything. */
const layoutProblem = <Receipt>(
  parts: ReadonlyMap<number, Part<Receipt>>,
  count: number,
  blockSize: number,
  describePart: (index: number, count: number) => string
): string | undefined => {
  for (let index = 0; index < count; index++) {
    if (!parts.has(index)) return `${describePart(index, count)} was never written`
  }
  for (const index of parts.keys()) {
    if (index >= count) return `block ${index} was written but the object has ${count} blocks`
  }
  for (let index = 0; index < count - 1; index++) {
    const size = parts.get(index)!.size
    if (size !== blockSize) return `block ${index} is ${size} bytes; every block but the last must be ${blockSize} bytes`
  }
  return undefined
}

/**
 * The upload contract the runtime relies on, around a store's raw upload: valid, size-checked block indexes, the
 * receipts of every block kept for `complete`, no block missing or extra at `complete`, `complete` and `abort`
 * idempotent, `abort` after `complete` a no-op, nothing accepted after either.
 */
export const guardUpload = <Receipt>(raw: RawUpload<Receipt>, options: GuardOptions): UploadHandle => {
  const { blockSize, rules, fail } = options
  const maxParts = rules.maxParts?.count ?? Number.MAX_SAFE_INTEGER
  const describePart = rules.describePart ?? defaultDescribePart
  const parts = new Map<number, Part<Receipt>>()
  let state: "open" | "completed" | "aborted" = "open"
  let next = 0

  const ensureOpen = (operation: SinkOperation) =>
    state === "open" ? Effect.void : Effect.fail(fail(operation, `the upload was already ${state}`, { conflict: true }))

  const writeBlock = Effect.fn(`${options.spanPrefix}.writeBlock`, perPart)(function* (index: number, bytes: Uint8Array) {
    yield* ensureOpen("writeBlock")
    if (!Number.isSafeInteger(index) || index < 0) return yield* fail("writeBlock", `invalid block index ${index}`)
    if (index >= maxParts) {
      return yield* fail(
        "writeBlock",
        `block ${index} is beyond the destination's limit of ${maxParts} parts per object`,
        { hint: rules.maxParts?.hint }
      )
    }
    if (bytes.length > blockSize) {
      return yield* fail(
        "writeBlock",
        `block ${index} is ${bytes.length} bytes, more than the block size: it exceeds ${blockSize} bytes`
      )
    }
    if (rules.inOrder === true) {
      // A retry of a block that already went out: it cannot be taken back, and it is already there.
      if (index < next) return
      if (index > next) return yield* fail("writeBlock", `blocks must come in order: expected block ${next}, got ${index}`)
    }
    const receipt = yield* raw.writePart(index, bytes)
    parts.set(index, { receipt, size: bytes.length })
    if (rules.inOrder === true) next = index + 1
  })

  const complete = Effect.fn(`${options.spanPrefix}.complete`, perPart)(function* (blockCount: number) {
    if (state === "completed") return
    yield* ensureOpen("complete")
    if (!Number.isSafeInteger(blockCount) || blockCount < 0 || blockCount > maxParts) {
      return yield* fail("complete", `invalid block count ${blockCount}`)
    }
    if (rules.inOrder === true && blockCount !== next) {
      return yield* fail("complete", `cannot complete after ${next} blocks: ${blockCount} were announced`)
    }
    const problem = layoutProblem(parts, blockCount, blockSize, describePart)
    if (problem !== undefined) return yield* fail("complete", problem)
    const ordered = Array.from({ length: blockCount }, (_, index) => parts.get(index)!)
    yield* raw.complete(
      ordered.map((part) => part.receipt),
      ordered.reduce((total, part) => total + part.size, 0)
    )
    state = "completed"
  })

  const abort = Effect.suspend(() => {
    // After complete the object is the result, not debris: aborting must not touch it.
    if (state !== "open") return Effect.void
    return Effect.tap(raw.abort, () => {
      state = "aborted"
      parts.clear()
    })
  }).pipe(Effect.withSpan(`${options.spanPrefix}.abort`))

  return { writeBlock, complete, abort }
}
