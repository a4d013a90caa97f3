/**
 * Installs the nested npm packages the test scripts use (plugins/*, scripts/node22), each with its own lockfile.
 *
 * `npm ci` runs when a package's node_modules is missing or older than its package-lock.json; concurrent callers
 * (test files preparing the same plugin at once) are serialised by a lock directory in the package.
 */
import { spawnSync } from "node:child_process"
import * as fs from "node:fs"
import * as path from "node:path"
import process from "node:process"

const npm = process.platform === "win32" ? "npm.cmd" : "npm"

const mtime = (file) => fs.statSync(file, { throwIfNoEntry: false })?.mtimeMs

const needsInstall = (dir) => {
  const installed = mtime(path.join(dir, "node_modules", ".package-lock.json")) ?? mtime(path.join(dir, "node_modules"))
  const lock = mtime(path.join(dir, "package-lock.json"))
  return installed === undefined || (lock !== undefined && installed < lock)
}

/** Runs npm in `dir`; `quiet` prints its output only when it fails. Returns the exit code. */
export const npmIn = (dir, args, quiet) => {
  const result = spawnSync(npm, args, { cwd: dir, stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit", encoding: "utf8" })
  if (result.status !== 0 && quiet) process.stderr.write(`${result.stdout ?? ""}${result.stderr ?? ""}`)
  return result.status ?? 1
}

/** Runs `body` while holding `dir`'s install lock (a stale lock, older than 10 minutes, is taken over). */
export const withLock = (dir, body) => {
  const lock = path.join(dir, ".rivet-prepare.lock")
  const deadline = Date.now() + 10 * 60_000
  for (;;) {
    try {
      fs.mkdirSync(lock)
      break
    } catch (error) {
      if (error.code !== "EEXIST") throw error
      if ((mtime(lock) ?? Date.now()) < Date.now() - 10 * 60_000) fs.rmSync(lock, { recursive: true, force: true })
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${lock}`)
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 200)
    }
  }
  try {
    return body()
  } finally {
    fs.rmSync(lock, { recursive: true, force: true })
  }
}

/** `npm ci` in `dir` when its node_modules is missing or stale. Returns the exit code (0 when nothing was needed). */
export const install = (dir, quiet) =>
  withLock(dir, () => (needsInstall(dir) ? npmIn(dir, ["ci", "--no-audit", "--no-fund"], quiet) : 0))
