import { spawn, spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { type ProcessOptions, type ProcessResult, runProcess } from "./process.js"

const BIN = path.resolve(import.meta.dirname, "../../bin/rivet.js")

/** What most tests look at of a CLI run. */
export type CliResult = Pick<ProcessResult, "code" | "stdout" | "stderr">

/** Runs the built CLI (`bin/rivet.js`, after `npm run build`) as a user would. */
export const runCli = (
  args: ReadonlyArray<string>,
  options: { env?: Record<string, string>; cwd?: string; onStart?: ProcessOptions["onStart"] } = {}
) =>
  runProcess(process.execPath, [BIN, ...args], {
    cwd: options.cwd ?? process.cwd(),
    env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true", ...options.env },
    ...(options.onStart && { onStart: options.onStart })
  })

/** Whether util-linux `script` is there to run a command in a pseudo-terminal. */
export const hasScript = spawnSync("script", ["--version"]).status === 0

/**
 * Runs the built CLI inside a 120×40 pseudo-terminal (util-linux `script`), as a user's terminal would, and returns
 * every byte it wrote there (stdout and stderr together, as a terminal shows them).
 */
export const runCliInTerminal = (args: ReadonlyArray<string>, options: { cwd?: string } = {}) =>
  new Promise<{ readonly code: number | null; readonly output: string }>((resolve, reject) => {
    const quote = (arg: string) => `'${arg.replaceAll("'", "'\\''")}'`
    const command = `stty cols 120 rows 40; exec ${[process.execPath, BIN, ...args].map(quote).join(" ")}`
    const child = spawn("script", ["-qfec", command, "/dev/null"], {
      cwd: options.cwd ?? process.cwd(),
      env: { ...process.env, AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: "true" },
      stdio: ["ignore", "pipe", "pipe"]
    })
    let output = ""
    child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString("utf8")))
    child.on("error", reject)
    child.on("close", (code) => resolve({ code, output }))
  })

/** A terminal's text as last drawn, roughly: escape sequences dropped, a line redrawn in place ("\r") kept last. */
export const screenLines = (output: string): Array<string> =>
  output
    .split(/\r?\n/)
    // eslint-disable-next-line no-control-regex
    .map((line) => line.replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/^.*\r/, ""))

/** Writes a config file into a fresh temp directory and returns its path. */
export const writeConfig = (yaml: string, name = "rivet.yaml"): string => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-cli-"))
  const file = path.join(dir, name)
  fs.writeFileSync(file, yaml)
  return file
}
