import { setFlagsFromString } from "node:v8"
import type { Worker } from "node:worker_threads"

/**
 * Sets a V8 flag for this process and for every worker thread started after it: starting a worker resets V8's flags
 * to the command line's, so the flag is set again for each. Not done when the user's node options already match
 * `userSets` (their choice wins).
 */
export const holdV8Flag = (flag: string, userSets: RegExp): void => {
  if ([...process.execArgv, process.env["NODE_OPTIONS"] ?? ""].some((arg) => userSets.test(arg))) return
  const hold = () => setFlagsFromString(flag)
  hold()
  process.on("worker", (worker: Worker) => {
    hold()
    worker.once("online", hold)
  })
}
