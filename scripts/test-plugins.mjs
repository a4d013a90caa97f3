#!/usr/bin/env node
/**
 * Runs the tests of every example plugin package under plugins/ (each has its own package.json and lockfile).
 *
 *   node scripts/test-plugins.mjs                 # npm ci where needed, then npm test, in each plugins/* package
 *   node scripts/test-plugins.mjs --prepare DIR…  # only install (when needed) and build the given packages
 *
 * `npm ci` runs when a package's node_modules is missing or older than its package-lock.json. Prints one line
 * per plugin; exits non-zero if any failed. The plugins link the repository root (`rivet: file:../..`), so the
 * root must be built first (`npm run build`).
 */
import { spawnSync } from "node:child_process"
import console from "node:console"
import * as fs from "node:fs"
import * as path from "node:path"
import process from "node:process"

const ROOT = path.resolve(import.meta.dirname, "..")
const PLUGINS = path.join(ROOT, "plugins")
const npm = process.platform === "win32" ? "npm.cmd" : "npm"

const mtime = (file) => fs.statSync(file, { throwIfNoEntry: false })?.mtimeMs

const needsInstall = (dir) => {
  const installed = mtime(path.join(dir, "node_modules", ".package-lock.json")) ?? mtime(path.join(dir, "node_modules"))
  const lock = mtime(path.join(dir, "package-lock.json"))
  return installed === undefined || (lock !== undefined && installed < lock)
}

const npmIn = (dir, args, quiet) => {
  const result = spawnSync(npm, args, { cwd: dir, stdio: quiet ? ["ignore", "pipe", "pipe"] : "inherit", encoding: "utf8" })
  if (result.status !== 0 && quiet) process.stderr.write(`${result.stdout ?? ""}${result.stderr ?? ""}`)
  return result.status ?? 1
}

/** Serialises installs of one package across processes (test files may prepare the same plugin at once). */
const withLock = (dir, body) => {
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

const install = (dir, quiet) =>
  withLock(dir, () => (needsInstall(dir) ? npmIn(dir, ["ci", "--no-audit", "--no-fund"], quiet) : 0))

const pluginDirs = () =>
  fs
    .readdirSync(PLUGINS, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(PLUGINS, entry.name, "package.json")))
    .map((entry) => path.join(PLUGINS, entry.name))
    .sort()

const args = process.argv.slice(2)
if (args[0] === "--prepare") {
  for (const dir of args.slice(1).map((arg) => path.resolve(arg))) {
    const code = install(dir, true) || withLock(dir, () => npmIn(dir, ["run", "build", "--if-present"], true))
    if (code !== 0) {
      console.error(`${path.relative(ROOT, dir)}: prepare failed (exit ${code})`)
      process.exit(code)
    }
  }
  process.exit(0)
}

const results = []
for (const dir of pluginDirs()) {
  const name = path.relative(ROOT, dir)
  const started = Date.now()
  console.log(`\n── ${name} ──`)
  const installCode = install(dir, false)
  const code = installCode !== 0 ? installCode : npmIn(dir, ["test"], false)
  const seconds = ((Date.now() - started) / 1000).toFixed(1)
  results.push({ name, ok: code === 0, line: `${name}: ${code === 0 ? "ok" : `FAILED (${installCode !== 0 ? "npm ci" : "npm test"} exit ${code})`} in ${seconds}s` })
}
const failed = results.filter((result) => !result.ok).length
console.log(`\nPlugin packages: ${results.length - failed} ok, ${failed} failed`)
for (const result of results) console.log(`  ${result.line}`)
process.exit(failed === 0 ? 0 : 1)
