#!/usr/bin/env node
/**
 * Runs the tests of every example plugin package under plugins/ (each has its own package.json and lockfile).
 *
 *   node scripts/test-plugins.mjs                 # npm ci where needed, then npm test, in each plugins/* package
 *   node scripts/test-plugins.mjs --prepare DIR…  # only install (when needed) and build the given packages
 *
 * `npm ci` runs when a package's node_modules is missing or older than its package-lock.json. Prints one line
 * per plugin; exits non-zero if any failed. The plugins link the repository root (`rivet-export: file:../..`), so the
 * root must be built first (`npm run build`).
 */
import console from "node:console"
import * as fs from "node:fs"
import * as path from "node:path"
import process from "node:process"
import { install, npmIn, withLock } from "./npm-install.mjs"

const ROOT = path.resolve(import.meta.dirname, "..")
const PLUGINS = path.join(ROOT, "plugins")

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
