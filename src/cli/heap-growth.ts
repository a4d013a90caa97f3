import { setFlagsFromString } from "node:v8"
import type { Worker } from "node:worker_threads"

const FLAG = "--heap-growing-percent=15"
const hold = () => setFlagsFromString(FLAG)

/**
 * For a run with a partitioned export: every part it opens and closes (thousands, with many distinct values) leaves
 * its encoder, upload and fibers behind as garbage old enough to reach the old generation, and V8 lets that grow to
 * a few times the live heap before a full collection. Growing it by 15 % instead collects sooner. V8 reads the
 * factor at each full collection, so setting it once the config is read takes effect; starting a worker thread
 * resets V8's flags to the command line's, so it is set again for each (as young-generation.ts does). Not done when
 * the user sets it, nor for unpartitioned runs (their garbage dies young). Measured in docs/partitioning.md.
 */
export const collectPartsSooner = (): void => {
  const userSet = [...process.execArgv, process.env["NODE_OPTIONS"] ?? ""].some((arg) => /heap[-_]growing[-_]percent/.test(arg))
  if (userSet) return
  hold()
  process.on("worker", (worker: Worker) => {
    hold()
    worker.once("online", hold)
  })
}
