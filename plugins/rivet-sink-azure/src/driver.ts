import * as Effect from "effect/Effect"
import type * as Scope from "effect/Scope"
import * as Stream from "effect/Stream"
import { SinkError, type PluginContext, type SinkDriverShape, type StoredObject } from "rivet"
import { makeService } from "./auth.js"
import { DOCTOR_PROBE_NAME, type AzureConfig } from "./config.js"
import { bindContainer, type AzureContainer } from "./container.js"
import { invalidKeyReason } from "./keys.js"
import { beginUpload, putBlob } from "./upload.js"

const PROBE_BODY = new TextEncoder().encode("ok")

/**
 * Write permission on an existing container, with the one permission exports need: the probe blob is written
 * (a missing container fails with ContainerNotFound) and then deleted, best effort, since delete is not a
 * permission Rivet requires.
 */
const checkContainer = (azure: AzureContainer) =>
  Effect.gen(function* () {
    const probe = `${azure.prefix}${DOCTOR_PROBE_NAME}`
    yield* putBlob(azure, probe, PROBE_BODY, "text/plain")
    yield* azure
      .call("DeleteBlob", probe, (abortSignal) => azure.client.deleteBlob(probe, { abortSignal }))
      .pipe(Effect.ignore)
  }).pipe(Effect.withSpan("AzureSink.check"))

/** Every committed blob under the prefix (all pages), names relative to it; the doctor probe is left out. */
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
          const key = item.name.slice(azure.prefix.length)
          if (key === DOCTOR_PROBE_NAME) continue
          objects.push({ key, size: item.properties.contentLength ?? 0 })
        }
      }
      return objects
    })
    .pipe(Effect.withSpan("AzureSink.list"))

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
  ).pipe(Stream.withSpan("AzureSink.read"))

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
    const checkKey = (operation: string, key: string) => {
      const reason = invalidKeyReason(key, azure.prefix)
      return reason === undefined
        ? Effect.void
        : Effect.fail(
            new SinkError({
              plugin: "azure",
              operation,
              key: fullName(key),
              reason: "Unknown",
              retryable: false,
              message: `Azure ${operation} ${azure.uri(fullName(key))}: invalid key ${JSON.stringify(key)}: ${reason}`
            })
          )
    }

    const driver: SinkDriverShape = {
      label: `Azure(${config.container})`,
      uri: (key) => azure.uri(fullName(key ?? "")),
      capabilities: { markers: true, blockSize: config.block_size, concurrency: config.upload_concurrency },
      check: checkContainer(azure),
      put: Effect.fn("AzureSink.put")(function* (key: string, bytes: Uint8Array, contentType: string) {
        yield* checkKey("PutBlob", key)
        yield* putBlob(azure, fullName(key), bytes, contentType)
      }),
      begin: (key, contentType) =>
        Effect.zipRight(checkKey("PutBlock", key), beginUpload(azure, fullName(key), contentType)).pipe(
          Effect.withSpan("AzureSink.begin")
        ),
      list: listBlobs(azure),
      read: (key) => Stream.unwrap(Effect.as(checkKey("GetBlob", key), readBlob(azure, fullName(key))))
    }
    return driver
  })
