import { spawn } from "node:child_process"

export interface ProcessResult {
  readonly status: number
  readonly stdout: string
  readonly stderr: string
  /** stdout and stderr interleaved as they arrived. */
  readonly output: string
}

/**
 * Runs a command to its end without blocking the event loop. A test worker blocked in `spawnSync` for over a
 * minute (an `npm install` on a slow machine) cannot answer the test runner's messages in time, and the runner then
 * fails the whole run with a timeout error although every test passed.
 */
export const runProcess = (
  command: string,
  args: ReadonlyArray<string>,
  options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {}
) =>
  new Promise<ProcessResult>((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => {
      stdout += chunk.toString("utf8")
      output += chunk.toString("utf8")
    })
    child.stderr.on("data", (chunk: Buffer) => {
      stderr += chunk.toString("utf8")
      output += chunk.toString("utf8")
    })
    child.on("error", reject)
    child.on("close", (status) => resolve({ status: status ?? -1, stdout, stderr, output }))
  })
