import { type ChildProcess, spawn } from "node:child_process"
import * as path from "node:path"

/** What the change-data-capture fault tests share: the kill schedule and the CLI runs they kill. */

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** mulberry32: the kill schedule from a seed. */
export const random = (seed: number) => () => {
  seed = (seed + 0x6d2b79f5) | 0
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed)
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296
}

export interface Started {
  readonly child: ChildProcess
  readonly stderr: () => string
  readonly exited: Promise<{ readonly code: number | null; readonly signal: NodeJS.Signals | null }>
}

/**
 * `rivet run -c <config>` of the built CLI in `dir`, its stderr kept; `children` holds it until it exits, so a test
 * that fails or times out can kill what it started.
 */
export const startRun = (config: string, dir: string, children: Set<ChildProcess>, env: Record<string, string> = {}): Started => {
  const child = spawn(process.execPath, [BIN, "run", "-c", config], {
    cwd: dir,
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...env },
    stdio: ["ignore", "ignore", "pipe"]
  })
  children.add(child)
  let stderr = ""
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on("close", (code, signal) => {
      children.delete(child)
      resolve({ code, signal })
    })
  )
  return { child, stderr: () => stderr, exited }
}
