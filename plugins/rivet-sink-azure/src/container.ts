import type { ContainerClient } from "@azure/storage-blob"
import * as Effect from "effect/Effect"
import type { SinkError } from "rivet-export/plugin"
import type { AzureService } from "./auth.js"
import type { AzureConfig } from "./config.js"
import { toSinkError } from "./errors.js"

/** Everything an operation needs to talk to one container and report failures. */
export interface AzureContainer {
  readonly client: ContainerClient
  readonly container: string
  /** Normalised prefix: empty, or ending in `/`. */
  readonly prefix: string
  /** The URL of a blob (full name, prefix included) or of the container; never carries a SAS token. */
  readonly uri: (blob?: string) => string
  /** Maps what an SDK call (or a response stream) threw to a `SinkError`. */
  readonly toError: (operation: string, blob: string | undefined, cause: unknown) => SinkError
  /** Runs one SDK call, aborting its HTTP request on interruption and mapping failures to `SinkError`. */
  readonly call: <A>(
    operation: string,
    blob: string | undefined,
    run: (signal: AbortSignal) => Promise<A>
  ) => Effect.Effect<A, SinkError>
}

/** Binds the service client to the configured container and prefix. */
export const bindContainer = (service: AzureService, config: AzureConfig): AzureContainer => {
  const uri = (blob?: string) => `${service.serviceUrl}/${config.container}${blob === undefined ? "" : `/${blob}`}`
  const toError = (operation: string, blob: string | undefined, cause: unknown) =>
    toSinkError(cause, {
      operation,
      container: config.container,
      blob,
      uri: uri(blob),
      auth: service.source,
      scrub: service.scrub
    })
  return {
    client: service.client.getContainerClient(config.container),
    container: config.container,
    prefix: config.prefix ?? "",
    uri,
    toError,
    call: (operation, blob, run) => Effect.tryPromise({ try: run, catch: (cause) => toError(operation, blob, cause) })
  }
}
