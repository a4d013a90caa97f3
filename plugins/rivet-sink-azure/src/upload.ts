import { randomBytes } from "node:crypto"
import * as Effect from "effect/Effect"
import type { RawUpload } from "rivet-export/plugin"
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

/**
 * Starts a block upload: block `i` is staged under {@link blockId}(nonce, i) — its receipt — so writing it again
 * replaces it (idempotent, safe in parallel). `complete` commits the blocks in one Put Block List, which makes the
 * blob appear whole or not at all, and which succeeds again after a lost response. No network I/O happens here.
 */
export const beginUpload = (azure: AzureContainer, blob: string, contentType: string): RawUpload<string> => {
  const nonce = randomBytes(8).toString("hex")
  const blockBlob = azure.client.getBlockBlobClient(blob)
  return {
    writePart: (index, bytes) => {
      const id = blockId(nonce, index)
      return azure.call("PutBlock", blob, (abortSignal) => blockBlob.stageBlock(id, bytes, bytes.byteLength, { abortSignal })).pipe(
        Effect.as(id)
      )
    },
    complete: (ids) =>
      azure.call("PutBlockList", blob, (abortSignal) =>
        blockBlob.commitBlockList([...ids], { blobHTTPHeaders: { blobContentType: contentType }, abortSignal })
      ),
    // Uncommitted blocks cannot be deleted on their own (deleting the blob would destroy a committed one with the
    // same name); they are invisible to readers and Azure discards them after 7 days.
    abort: Effect.void
  }
}
