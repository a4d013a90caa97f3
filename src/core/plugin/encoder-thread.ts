import type * as Effect from "effect/Effect"
import type { Batch } from "../batch.js"
import type { FormatError } from "../errors.js"
import type { PartOpener } from "./encoder.js"

/** What the encoder thread offers the encoders of a format it runs. */
export interface EncoderThreadHooks {
  /**
   * Frees a batch's buffers now rather than at the thread's next garbage collection. On the thread a batch's buffers
   * arrived transferred and are the thread's alone: an encoder that keeps batches past `write` (a row group waiting
   * to be complete) calls this once it will read one no more and no byte it returned is a view of it.
   */
  readonly releaseBatch: (batch: Batch) => void
  /**
   * Frees ArrayBuffers the encoder made itself and reads no more (scratch it keeps across batches). An encoder
   * thread allocates few JS objects, so it seldom runs the full collections that free buffers which outlived a young
   * one: without this they pile up until one runs.
   */
  readonly releaseBuffers: (buffers: ReadonlyArray<ArrayBuffer>) => void
}

/**
 * What a format's encoder module exports for the encoder thread: from the export's decoded format config — a
 * structured clone of it, so it must be plain data — the part opener the thread uses, once per thread. Its part
 * encoders must write exactly the bytes the driver's `open` would: the thread takes the place of `open` only (the
 * engine still checks the schema with the driver's `validate`, and the rest of the driver stays where it is).
 */
export type PartEncoderFactory<C> = (config: C, hooks: EncoderThreadHooks) => Effect.Effect<PartOpener, FormatError>

/**
 * Declares that a format's parts can be encoded on a thread of the export's own (`FormatPlugin.encoderThread`). The
 * engine decides whether they are — a second core, not a partitioned export, not inside a lane, not turned off for the
 * run — and moves the batches there and the bytes back; the format writes no threading code. What the declaration
 * promises: the decoded config survives a structured clone, and the module's factory needs nothing else.
 */
export interface EncoderThreadSupport {
  /**
   * The ES module the encoder thread imports: a file URL (`import.meta.url`, `new URL("./parts.js",
   * import.meta.url)`) or an absolute path. It runs in a thread of its own, loaded afresh there.
   */
  readonly module: string | URL
  /** The module's export that is the `PartEncoderFactory`; default `"default"`. */
  readonly factory?: string | undefined
  /**
   * `true`: the encoders keep no reference into a batch once `write` returned (nor once `writeCapped` took its last
   * row), so the thread frees the batch's buffers then, after sending the bytes. Leave it out when they keep batches
   * longer (free each with `EncoderThreadHooks.releaseBatch`), or when unsure: the garbage collector frees them.
   */
  readonly freesBatchesAfterWrite?: boolean | undefined
  /**
   * `true`: every byte array the encoders return is theirs to give away — no view of memory they write to again,
   * share between parts or keep as a constant — so the thread transfers it to the reading thread as it is. Leave it
   * out when unsure: each reply is then copied into a buffer of its own first.
   */
  readonly ownsReturnedBytes?: boolean | undefined
}
