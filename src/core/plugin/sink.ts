import * as Context from "effect/Context"
import type * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Stream from "effect/Stream"
import type { SinkError } from "../errors.js"
import { type Definition, PLUGIN_API_VERSION, type PluginBase, type PluginContext } from "./base.js"

/** One object being written. Created by `SinkDriver.begin`. */
export interface UploadHandle {
  /**
   * Writes block `index` (0-based). Every block but the last is exactly `blockSize` bytes. Must be
   * idempotent — the runtime retries a failed block — and safe to call for several blocks at once when
   * `concurrency > 1`.
   */
  readonly writeBlock: (index: number, bytes: Uint8Array) => Effect.Effect<void, SinkError>
  /** Makes the object visible under its key. Nothing is visible before. */
  readonly complete: (blockCount: number) => Effect.Effect<void, SinkError>
  /** Discards everything written; leaves nothing behind. */
  readonly abort: Effect.Effect<void, SinkError>
}

/** How the runtime must drive a sink. */
export interface SinkCapabilities {
  /** Writes `manifest.json` and `_SUCCESS` (false for streams such as stdout). */
  readonly markers: boolean
  /** Size of the blocks handed to `writeBlock`. Small objects (one block) go through `put`. */
  readonly blockSize: number
  /** How many blocks of one object may be written at once. */
  readonly concurrency: number
  /**
   * `true` when the sink is done with the bytes given to `put` and `writeBlock` once the returned effect has
   * succeeded — it wrote or copied them, and keeps no reference. The runtime then frees its own block buffers at
   * once rather than leaving them to the garbage collector (less memory, fewer collections). Leave it out when
   * the sink may read the bytes later (it queues them, or keeps the arrays); the sink conformance suite checks it.
   */
  readonly releasesBytes?: boolean
}

/** An object found by `SinkDriverShape.list`: its key relative to the destination and its size in bytes. */
export interface StoredObject {
  readonly key: string
  readonly size: number
}

/** An upload a destination holds that was begun and neither completed nor aborted. */
export interface PendingUpload {
  /** The key relative to the destination. */
  readonly key: string
  /** The destination's id for the upload (S3: the UploadId). */
  readonly id: string
}

/**
 * Uploads the destination keeps (and may bill) until they are completed or aborted, which a lost response can leave
 * without a handle: S3 created the multipart upload, but the client never learned its id.
 */
export interface PendingUploads {
  /** The pending uploads whose key starts with `keyPrefix` (relative to the destination), every page of them. */
  readonly list: (keyPrefix: string) => Effect.Effect<ReadonlyArray<PendingUpload>, SinkError>
  /** Aborts one; an upload already gone is not an error. */
  readonly abort: (upload: PendingUpload) => Effect.Effect<void, SinkError>
}

/**
 * What a store's answer to a whole-object write confirms it stored, when it says so (S3: the
 * `x-amz-checksum-sha256` of the PutObject response). The runtime uses it where it cannot read the object back.
 */
export interface WriteReceipt {
  /** Hex SHA-256 of the bytes the store stored. */
  readonly sha256?: string | undefined
}

/** What `SinkDriverShape.create` did: wrote the object, or found one under its key and wrote nothing. */
export type CreateOutcome = "created" | "exists"

/** What `rivet doctor` should tell beyond a passing check: steps it skipped, objects it could not remove. */
export interface SinkCheckReport {
  readonly notes: ReadonlyArray<string>
}

/** What a sink plugin's layer provides: primitive, non-retrying destination operations. */
export interface SinkDriverShape {
  /** Label for doctor lines: `S3(my-bucket)`, `Local(./output)`. */
  readonly label: string
  /** The URI of a key (or of the destination root when no key): `s3://bucket/prefix/key`. */
  readonly uri: (key?: string) => string
  readonly capabilities: SinkCapabilities
  /** Reachability and write permission (for `rivet doctor`); a report's notes are shown under the passing check. */
  readonly check: Effect.Effect<SinkCheckReport | void, SinkError>
  /** Writes a whole small object atomically; the receipt, when the store gives one, says what it stored. */
  readonly put: (key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<WriteReceipt | void, SinkError>
  /** Starts a large object written block by block. */
  readonly begin: (key: string, contentType: string) => Effect.Effect<UploadHandle, SinkError>
  /**
   * Every object under the destination, nested keys included (keys relative to it: validation finds the kept
   * manifests under `_manifests/`), where the destination can be listed.
   */
  readonly list?: Effect.Effect<ReadonlyArray<StoredObject>, SinkError>
  /**
   * Removes what writers that no longer run (a process killed mid-write) left behind — temp files, uploads never
   * completed — and returns their keys. Never touches objects under final keys or writes still in progress.
   * The runtime calls it before each export.
   */
  readonly sweep?: Effect.Effect<ReadonlyArray<string>, SinkError>
  /** Reads an object back, where the destination supports it. */
  readonly read?: (key: string) => Stream.Stream<Uint8Array, SinkError>
  /** Reads `length` bytes of an object from byte `offset` (a Parquet footer), where the destination supports it. */
  readonly readRange?: (key: string, offset: number, length: number) => Effect.Effect<Uint8Array, SinkError>
  /**
   * Writes a whole small object atomically only when no object has its key — `exists` when one has, and nothing is
   * written (local: a hard link; S3: a conditional PUT `If-None-Match: *`). A table format commits with it.
   */
  readonly create?: (key: string, bytes: Uint8Array, contentType: string) => Effect.Effect<CreateOutcome, SinkError>
  /**
   * Destinations whose unfinished uploads outlive a lost `begin` response or an interrupted request (S3): the
   * runtime lists the keys it began uploads under and aborts what no handle completed (src/engine/upload-cleanup.ts).
   */
  readonly pendingUploads?: PendingUploads
}

/** The tag a sink plugin's `make` layer provides. */
export class SinkDriver extends Context.Tag("rivet/SinkDriver")<SinkDriver, SinkDriverShape>() {}

/** A sink plugin value (the YAML `exports[].destination.type`); make one with `defineSink`. */
export interface SinkPlugin<C = unknown, I = unknown, T extends string = string> extends PluginBase<"sink", C, I, T> {
  readonly make: (config: C, context: PluginContext) => Layer.Layer<SinkDriver, SinkError>
}

/** Declares a sink plugin (the YAML `exports[].destination.type`). */
export const defineSink = <C, I, const T extends string = string>(
  definition: Definition<SinkPlugin<C, I, T>>
): SinkPlugin<C, I, T> => ({
  ...definition,
  kind: "sink",
  apiVersion: definition.apiVersion ?? PLUGIN_API_VERSION
})
