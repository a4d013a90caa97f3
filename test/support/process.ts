import { type ChildProcess, spawn } from "node:child_process"

export interface ProcessResult {
  /** The exit code, or null when a signal ended the process. */
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
  /** stdout and stderr interleaved as they arrived. */
  readonly output: string
  /** From the last byte written to stdout or stderr to the exit: what the process did after its last word. */
  readonly msAfterOutput: number
}

export interface ProcessOptions {
  readonly cwd?: string
  readonly env?: NodeJS.ProcessEnv
  /** Called once the process is spawned, e.g. to signal it when the test is ready. */
  readonly onStart?: (child: ChildProcess) => void
}

/**
 * Runs a command to its end without blocking the event loop. A test worker blocked in `spawnSync` for over a
 * minute (an `npm install` on a slow machine) cannot answer the test runner's messages in time, and the runner then
 * fails the whole run with a timeout error although every test passed.
 */
export const runProcess = (command: string, args: ReadonlyArray<string>, options: ProcessOptions = {}) =>
  new Promise<ProcessResult>((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env ?? process.env, stdio: ["ignore", "pipe", "pipe"] })
    let stdout = ""
    let stderr = ""
    let output = ""
    let lastOutput = Date.now()
    const received = (append: (text: string) => void) => (chunk: Buffer) => {
      const text = chunk.toString("utf8")
      append(text)
      output += text
      lastOutput = Date.now()
    }
    child.stdout.on("data", received((text) => (stdout += text)))
    child.stderr.on("data", received((text) => (stderr += text)))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr, output, msAfterOutput: Date.now() - lastOutput }))
    options.onStart?.(child)
  })
