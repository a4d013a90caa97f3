import type { BlockBlobClient, ContainerClient } from "@azure/storage-blob"
import { runSinkConformance } from "rivet-export/testing"
import { beforeAll, describe, it } from "vitest"
import { adminClient, createContainer, keyAuth, layerFor, uniqueName } from "./support/sink.js"

const container = uniqueName("conformance")
const prefix = "exports/daily/"
let client: ContainerClient

beforeAll(async () => {
  await createContainer(container)
  client = adminClient().getContainerClient(container)
})

const notFound = (error: unknown) =>
  typeof error === "object" && error !== null && (error as { statusCode?: number }).statusCode === 404

runSinkConformance("azure sink conformance (Azurite)", {
  makeLayer: () => layerFor(keyAuth(container, { prefix, block_size: "1MiB" })),
  readBack: async (key) => {
    const blob: BlockBlobClient = client.getBlockBlobClient(`${prefix}${key}`)
    try {
      return new Uint8Array(await blob.downloadToBuffer())
    } catch (error) {
      if (notFound(error)) return undefined
      throw error
    }
  },
  // Committed blobs: staged blocks that were never committed are not objects — no reader can list or get them,
  // and they cannot be deleted without deleting a committed blob of the same name (Azure drops them after 7 days).
  listKeys: async () => {
    const keys: Array<string> = []
    for await (const item of client.listBlobsFlat({ prefix })) keys.push(item.name.slice(prefix.length))
    return keys
  },
  missingDestinationLayer: () => layerFor(keyAuth(uniqueName("missing"))),
  // 12 blocks of 1 MiB keep the large-object tests multi-block while sparing Azurite's in-memory store.
  blockCount: 12,
  timeout: 60_000
}, { describe, it })
