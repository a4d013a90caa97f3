import { execFileSync } from "node:child_process"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

// The built module, as bin/rivet.js imports it: it changes a process-wide V8 flag, so it runs in a child process.
const MODULE = path.resolve(import.meta.dirname, "../../dist/cli/young-generation.js")

// Starts a worker thread (which resets V8's flags), then allocates young objects with survivors and prints the new
// space's size in MiB.
const PROBE = `
import { getHeapSpaceStatistics } from "node:v8"
import { Worker } from "node:worker_threads"
await import(process.env.MODULE)
const worker = new Worker("setTimeout(() => {}, 10)", { eval: true })
await new Promise((resolve) => worker.once("online", resolve))
const keep = []
for (let i = 0; i < 3e6; i++) {
  const x = { i, s: [i, i + 1] }
  if (i % 10 === 0) keep.push(x)
  if (keep.length > 100000) keep.length = 0
}
console.log(getHeapSpaceStatistics().find((space) => space.space_name === "new_space").space_size / 2 ** 20)
process.exit(0)
`

const newSpaceMiB = (nodeOptions: string): number =>
  Number(
    execFileSync(process.execPath, ["--input-type=module", "-e", PROBE], {
      env: { ...process.env, MODULE, NODE_OPTIONS: nodeOptions },
      encoding: "utf8"
    }).trim()
  )

describe("the CLI's young generation", () => {
  it("stays at its initial size, also after a worker thread started", () => {
    expect(newSpaceMiB("")).toBeLessThanOrEqual(4)
  })

  it("grows as V8 decides when the user sizes it", () => {
    expect(newSpaceMiB("--max-semi-space-size=16")).toBeGreaterThan(8)
  })
})
