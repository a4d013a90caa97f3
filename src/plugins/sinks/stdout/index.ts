import { defineSink } from "../../../core/plugin.js"
import { StdoutConfig } from "./config.js"
import { stdoutLayer } from "./driver.js"

/** `destination: { type: stdout }` — the export's bytes on standard output. */
export default defineSink({
  type: "stdout",
  description: "Standard output, for piping into another program (no manifest, no _SUCCESS)",
  config: StdoutConfig,
  make: () => stdoutLayer()
})
