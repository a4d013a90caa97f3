import { spawn } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")

export interface CliResult {
  readonly code: number | null
  readonly stdout: string
  readonly stderr: string
}

/** Runs the built CLI (`bin/rivet.js`, after `npm run build`) as a user would. */
export const runCli = (args: ReadonlyArray<string>, options: { env?: Record<string, string>; cwd?: string } = {}) =>
  new Promise<CliResult>((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {
      cwd: options.cwd ?? process.cwd(),
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...options.env },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let stdout = ""
    let stderr = ""
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString("utf8")))
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString("utf8")))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, stdout, stderr }))
  })

/** Writes a config file into a fresh temp directory and returns its path. */
export const writeConfig = (yaml: string, name = "rivet.yaml"): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cli-"))
  const file = path.join(dir, name)
  fs.writeFileSync(file, yaml)
  return file
}
