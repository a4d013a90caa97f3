import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { Sink, type PluginContext, type SinkError, type SinkDriverShape, type SinkOperation, type StoredObject } from "rivet-export/plugin"
import { makeService } from "./auth.js"
import type { AzureConfig } from "./config.js"
import { bindContainer, type AzureContainer } from "./container.js"
import { azureKeyProblem } from "./keys.js"
import { beginUpload, MAX_BLOCKS, putBlob } from "./upload.js"

/** The Blob service request behind each operation, for messages. */
const AZURE_OPERATION: Readonly<Record<SinkOperation, string>> & Readonly<Record<string, string | undefined>> = {
  check: "PutBlob",
  put: "PutBlob",
  create: "PutBlob",
  begin: "PutBlock",
  writeBlock: "PutBlock",
  complete: "PutBlockList",
  abort: "PutBlock",
  list: "ListBlobs",
  read: "GetBlob",
  readRange: "GetBlob",
  sweep: "ListBlobs"
}

/** Every committed blob under the prefix (all pages), names relative to it. */
const listBlobs = (azure: AzureContainer) =>
  azure
    .call("ListBlobs", undefined, async (abortSignal) => {
      const objects: Array<StoredObject> = []
      const pages = azure.client
        .listBlobsFlat(azure.prefix === "" ? { abortSignal } : { prefix: azure.prefix, abortSignal })
        .byPage({ maxPageSize: 5000 })
      for await (const page of pages) {
        for (const item of page.segment.blobItems) {
          if (!item.name.startsWith(azure.prefix)) continue
          objects.push({ key: item.name.slice(azure.prefix.length), size: item.properties.contentLength ?? 0 })
        }
      }
      return objects
    })

/** Get Blob streamed: the response body is released when the stream ends, fails or is interrupted. */
const readBlob = (azure: AzureContainer, blob: string) =>
  Stream.unwrapScoped(
    Effect.gen(function* () {
      const response = yield* Effect.acquireRelease(
        azure.call("GetBlob", blob, (abortSignal) =>
          // maxRetryRequests: 0 — no SDK re-reads behind the runtime's back, as for every other call.
          azure.client.getBlockBlobClient(blob).download(0, undefined, { abortSignal, maxRetryRequests: 0 })
        ),
        (response) => Effect.sync(() => response.readableStreamBody?.destroy())
      )
      const body = response.readableStreamBody
      if (body === undefined) return Stream.empty
      return Stream.fromAsyncIterable(body as AsyncIterable<Uint8Array>, (cause) => azure.toError("GetBlob", blob, cause))
    })
  )

/**
 * The Azure driver: a service client for the configured auth source, bound to one container and prefix, exposing
 * the sink primitives. Fails before any network I/O when the secret's environment variable is unset.
 */
export const makeAzureDriver = (
  config: AzureConfig,
  context: PluginContext
): Effect.Effect<SinkDriverShape, SinkError, Scope.Scope> =>
  Effect.gen(function* () {
    const service = yield* makeService(config, context.env)
    const azure = bindContainer(service, config)
    const fullName = (key: string) => `${azure.prefix}${key}`

    return Sink.make({
      spanPrefix: "AzureSink",
      label: `Azure(${config.container})`,
      uri: (key) => azure.uri(fullName(key ?? "")),
      capabilities: { markers: true, blockSize: config.block_size, concurrency: config.upload_concurrency },
      usageError: Sink.usageErrors("azure", (problem) => {
        const request = AZURE_OPERATION[problem.operation] ?? problem.operation
        const blob = fullName(problem.key)
        return { operation: request, key: blob, message: `Azure ${request} ${azure.uri(blob)}: ${problem.message}` }
      }),
      keyProblem: (key) => azureKeyProblem(key, azure.prefix),
      uploads: {
        maxParts: { count: MAX_BLOCKS, hint: "Raise block_size: a blob holds at most block_size × 50,000 bytes." }
      },
      // A missing container fails the probe's Put Blob with ContainerNotFound; delete is not a permission Rivet
      // requires, so the framework removes the probe on a best-effort basis.
      probe: {
        remove: (key) =>
          azure.call("DeleteBlob", fullName(key), (abortSignal) => azure.client.deleteBlob(fullName(key), { abortSignal }))
      },
      put: (key, bytes, contentType) => Effect.asVoid(putBlob(azure, fullName(key), bytes, contentType)),
      begin: (key, contentType) => Effect.sync(() => beginUpload(azure, fullName(key), contentType)),
      list: listBlobs(azure),
      read: (key) => readBlob(azure, fullName(key))
    })
  })
