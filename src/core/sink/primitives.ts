import type * as Effect from "effect/Effect"
import type * as Stream from "effect/Stream"
import type { SinkError } from "../errors.js"
import type { CreateOutcome, PendingUploads, SinkCapabilities, StoredObject, WriteReceipt } from "../plugin.js"

/** The operations `Sink.make` names in spans and in the errors it asks the plugin to build. */
export type SinkOperation =
  | "check"
  | "put"
  | "create"
  | "begin"
  | "writeBlock"
  | "complete"
  | "abort"
  | "list"
  | "read"
  | "readRange"
  | "sweep"

/**
 * One object being written, as the store sees it. `Sink.make` calls `writePart` only for a valid index of an open
 * upload, keeps each part's receipt, and calls `complete` once every part is there, with the receipts in part order
 * — the plugin keeps no bookkeeping of its own.
 */
export interface RawUpload<Receipt> {
  /** Stores part `index` (0-based) and returns what `complete` needs of it (S3: the ETag). May run for several parts at once. */
  readonly writePart: (index: number, bytes: Uint8Array) => Effect.Effect<Receipt, SinkError>
  /** Makes the object visible from its parts; `byteLength` is the sum of their sizes. Retried after a failure. */
  readonly complete: (receipts: ReadonlyArray<Receipt>, byteLength: number) => Effect.Effect<void, SinkError>
  /** Discards what was written. Called at most once, and never after a successful `complete`. */
  readonly abort: Effect.Effect<void, SinkError>
}

/** A request the framework refuses, for the plugin to word as a `SinkError` in its store's terms. */
export interface UsageProblem {
  readonly operation: SinkOperation
  /** The key relative to the destination. */
  readonly key: string
  /** What is wrong, e.g. `block 1 of 3 was never written`. */
  readonly message: string
  /** `Conflict`: the upload was already completed or aborted; `Unknown`: the request breaks the contract. */
  readonly reason: "Conflict" | "Unknown"
  readonly hint?: string | undefined
}

/** Limits and conventions of a store's uploads, for the framework's checks and messages. */
export interface UploadRules {
  /** Most parts one object may have (S3: 10,000); with the hint shown when an object would need more. */
  readonly maxParts?: { readonly count: number; readonly hint: string } | undefined
  /** How a part is named in messages; default `block 1 of 3`. */
  readonly describePart?: ((index: number, count: number) => string) | undefined
  /**
   * For streams that cannot take bytes back (stdout): parts must come in order, a part written again after it went
   * out is skipped (it is already there), and `complete` must announce exactly the parts written.
   */
  readonly inOrder?: boolean | undefined
}

/**
 * What a sink plugin provides to `Sink.make`: the store's primitive operations only. Key validation, the upload
 * state machine, the doctor probe and the spans are added by the framework.
 */
export interface SinkPrimitives<Receipt> {
  /** Span names are `<spanPrefix>.<operation>`: `S3Sink.put`. */
  readonly spanPrefix: string
  /** Label for doctor lines: `S3(my-bucket)`. */
  readonly label: string
  /** The URI of a key (or of the destination root when no key): `s3://bucket/prefix/key`. */
  readonly uri: (key?: string) => string
  readonly capabilities: SinkCapabilities
  /**
   * Builds the non-retryable error for a request the framework refuses (an invalid key, a part missing at
   * complete, a write after abort), in the store's own words.
   */
  readonly usageError: (problem: UsageProblem) => SinkError
  /** Refusals beyond Rivet's key rules (e.g. a store's key length limit), for a key relative to the destination. */
  readonly keyProblem?: ((key: string) => string | undefined) | undefined
  /** Writes a whole small object atomically; returns what the store confirmed it stored, when it says. */
  readonly put: (key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<WriteReceipt | void, SinkError>
  /** Starts an object written part by part. Absent: parts are buffered in memory and written with one `put`. */
  readonly begin?: ((key: string, contentType: string) => Effect.Effect<RawUpload<Receipt>, SinkError>) | undefined
  readonly uploads?: UploadRules | undefined
  /** Reachability checks `rivet doctor` runs before writing its probe object (S3: GetBucketLocation). */
  readonly check?: Effect.Effect<void, SinkError> | undefined
  /**
   * `false` for destinations where `rivet doctor` must not write an object (stdout, a test double); otherwise the
   * probe is written with `put` and removed with `remove` (best effort: delete permission is not required, and a
   * removal that fails is a note under the passing check).
   */
  readonly probe: false | { readonly remove: (key: string) => Effect.Effect<void, SinkError> }
  /** Every object under the destination, nested keys included (keys relative to it). */
  readonly list?: Effect.Effect<ReadonlyArray<StoredObject>, SinkError> | undefined
  /** Reads an object back. */
  readonly read?: ((key: string) => Stream.Stream<Uint8Array, SinkError>) | undefined
  /** Reads `length` bytes of an object from byte `offset`. */
  readonly readRange?: ((key: string, offset: number, length: number) => Effect.Effect<Uint8Array, SinkError>) | undefined
  /** Writes a whole small object only when its key is free (see `SinkDriverShape.create`). */
  readonly create?: ((key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<CreateOutcome, SinkError>) | undefined
  /** Removes what writers that no longer run left behind and returns their keys (see `SinkDriverShape.sweep`). */
  readonly sweep?: Effect.Effect<ReadonlyArray<string>, SinkError> | undefined
  readonly pendingUploads?: PendingUploads | undefined
}
