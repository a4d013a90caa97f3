import { BlobServiceClient, StorageSharedKeyCredential } from "@azure/storage-blob"
import * as Effect from "effect/Effect"
import type * as Layer from "effect/Layer"
import type * as Either from "effect/Either"
import * as Schema from "effect/Schema"
import { SinkDriver, type SinkDriverShape, type SinkError } from "rivet-export"
import { inject } from "vitest"
import plugin, { AzureConfig } from "../../src/index.js"
import { AZURITE_ACCOUNT, AZURITE_KEY } from "./azurite.js"

export const azuriteUrl = (): string => inject("azuriteUrl")

/** A service client that talks to Azurite behind the driver's back. */
export const adminClient = (): BlobServiceClient =>
  new BlobServiceClient(azuriteUrl(), new StorageSharedKeyCredential(AZURITE_ACCOUNT, AZURITE_KEY), {
    retryOptions: { maxTries: 1 }
  })

export const uniqueName = (area: string): string => `${area}-${Math.random().toString(36).slice(2, 10)}`

export const createContainer = async (name: string): Promise<void> => {
  await adminClient().getContainerClient(name).create()
}

/** The plugin's layer for a destination block, decoded the way Rivet decodes it (unknown keys rejected). */
export const layerFor = (
  destination: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>> = { AZURITE_KEY }
): Layer.Layer<SinkDriver, SinkError> => {
  const config = Schema.decodeUnknownSync(AzureConfig, { onExcessProperty: "error" })(destination)
  return plugin.make(config, { configDir: process.cwd(), env })
}

/** Account-key auth against Azurite for a container. */
export const keyAuth = (container: string, extra: Record<string, unknown> = {}) => ({
  container,
  account_url: azuriteUrl(),
  account_key_env: "AZURITE_KEY",
  ...extra
})

/** Runs `body` with the driver of `layer` (building the layer included); a failure comes back as `Left`. */
export const withDriver = <A>(
  layer: Layer.Layer<SinkDriver, SinkError>,
  body: (sink: SinkDriverShape) => Effect.Effect<A, SinkError>
): Promise<Either.Either<A, SinkError>> =>
  Effect.runPromise(Effect.either(Effect.flatMap(SinkDriver, body).pipe(Effect.provide(layer))))
