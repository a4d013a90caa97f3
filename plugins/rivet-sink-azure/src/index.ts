import * as Layer from "effect/Layer"
import { defineSink, SinkDriver } from "rivet-export/plugin"
import { AzureConfig } from "./config.js"
import { makeAzureDriver } from "./driver.js"

/**
 * The `azure` destination: Azure Blob Storage, or a loopback emulator (Azurite). Large parts are block blobs
 * whose blocks the runtime stages (and retries) one by one and commits in one Put Block List; small parts,
 * manifest.json and _SUCCESS are written with one Put Blob.
 */
export default defineSink({
  type: "azure",
  config: AzureConfig,
  description: "Azure Blob Storage or a loopback emulator (Azurite): block blobs, manifest.json and _SUCCESS.",
  make: (config, context) => Layer.scoped(SinkDriver, makeAzureDriver(config, context))
})

export { AzureConfig } from "./config.js"
export { makeAzureDriver } from "./driver.js"
