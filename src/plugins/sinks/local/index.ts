import { defineSink } from "../../../core/plugin.js"
import { LocalConfig } from "./config.js"
import { localLayer } from "./driver.js"

/** `destination: { type: local, path: ./output }` — files on a local or mounted file system. */
export default defineSink({
  type: "local",
  description: "Files on a local or mounted disk, written to a dot-temp file and renamed into place",
  config: LocalConfig,
  make: (config, context) => localLayer(config, context)
})
