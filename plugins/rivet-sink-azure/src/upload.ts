import { randomBytes } from "node:crypto"
import * as Effect from "effect/Effect"
import { SinkError, type UploadHandle } from "rivet"
import type { AzureContainer } from "./container.js"

/** Azure's limit on the committed blocks of one block blob. */
export const MAX_BLOCKS = 50_000

/**
 * The id of block `index` of one upload. Every id has the same length (Azure requires it within a blob), and
 * carries a per-upload nonce, so two uploads racing on one blob name never commit each other's blocks.
 */
export const blockId = (nonce: string, index: number): string =>
  Buffer.from(`${nonce}-${String(index).padStart(6, "0")}`, "utf8").toString("base64")

/** Writes a whole blob with one Put Blob (small parts, manifest.json, _SUCCESS). */
export const putBlob = (azure: AzureContainer, blob: string, bytes: Uint8Array, contentType: string) =>
  azure.call("PutBlob", blob, (abortSignal) =>
    azure.client.getBlockBlobClient(blob).upload(bytes, bytes.byteLength, {
      blobHTTPHeaders: { blobContentType: contentType },
      abortSignal
    })
  )

const uploadError = (azure: AzureContainer, blob: string, operation: string, message: string, hint?: string) =>
  new SinkError({
    plugin: "azure",
    operation,
    key: blob,
    reason: "Unknown",
    retryable: false,
    message: `Azure ${operation} ${azure.uri(blob)}: ${message}`,
    ...(hint === undefined ? {} : { hint })
  })

type State = "open" | "completed" | "aborted"

/**
 * Starts a block upload: block `i` is staged under {@link blockId}(nonce, i), so writing it again replaces it
 * (idempotent, safe in parallel). `complete(n)` commits blocks 0..n-1 in one Put Block List, which makes the blob
 * appear whole or not at all; until then nothing is visible under the name. No network I/O happens here.
 */
export const beginUpload = (azure: AzureContainer, blob: string, contentType: string): Effect.Effect<UploadHandle> =>
  Effect.sync(() => {
    const nonce = randomBytes(8).toString("hex")
    const blockBlob = azure.client.getBlockBlobClient(blob)
    const staged = new Set<number>()
    let state: State = "open"

    const ensureOpen = (operation: string) =>
      state === "open" ? Effect.void : Effect.fail(uploadError(azure, blob, operation, `the upload was already ${state}`))

    const writeBlock = Effect.fn("AzureSink.writeBlock")(function* (index: number, bytes: Uint8Array) {
      yield* ensureOpen("PutBlock")
      if (!Number.isInteger(index) || index < 0 || index >= MAX_BLOCKS) {
        return yield* uploadError(
          azure,
          blob,
          "PutBlock",
          `block ${index} is outside Azure's limit of ${MAX_BLOCKS} blocks per blob`,
          "Raise block_size: a blob holds at most block_size × 50,000 bytes."
        )
      }
      yield* azure.call("PutBlock", blob, (abortSignal) =>
        blockBlob.stageBlock(blockId(nonce, index), bytes, bytes.byteLength, { abortSignal })
      )
      staged.add(index)
    })

    // Committing the same list again after a lost response succeeds (the blocks are then committed ones), so a
    // retried `complete` is harmless.
    const complete = Effect.fn("AzureSink.complete")(function* (blockCount: number) {
      if (state === "completed") return
      yield* ensureOpen("PutBlockList")
      if (!Number.isInteger(blockCount) || blockCount < 0 || blockCount > MAX_BLOCKS) {
        return yield* uploadError(azure, blob, "PutBlockList", `invalid block count ${blockCount}`)
      }
      const ids: Array<string> = []
      for (let index = 0; index < blockCount; index++) {
        if (!staged.has(index)) {
          return yield* uploadError(azure, blob, "PutBlockList", `block ${index} of ${blockCount} was never written`)
        }
        ids.push(blockId(nonce, index))
      }
      yield* azure.call("PutBlockList", blob, (abortSignal) =>
        blockBlob.commitBlockList(ids, { blobHTTPHeaders: { blobContentType: contentType }, abortSignal })
      )
      state = "completed"
    })

    // Uncommitted blocks cannot be deleted on their own (deleting the blob would destroy a committed one with the
    // same name); they are invisible to readers and Azure discards them after 7 days. After `complete` the blob is
    // the result, not debris: abort leaves it alone.
    const abort = Effect.sync(() => {
      if (state === "open") state = "aborted"
    }).pipe(Effect.withSpan("AzureSink.abort"))

    const handle: UploadHandle = { writeBlock, complete, abort }
    return handle
  })
