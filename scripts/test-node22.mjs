#!/usr/bin/env node
/**
 * Runs a cross-section of the test suite on Node.js 22 (Rivet supports Node 20.19+ and 22; the rest of `npm test`
 * runs on the Node that runs npm). Node 22 is the npm package `node` installed in scripts/node22.
 *
 *   node scripts/test-node22.mjs
 *
 * State goes to the tests' PostgreSQL (RIVET_TEST_STATE=postgres, see test/support/global-setup.ts): the
 * better-sqlite3 in node_modules is compiled for the Node that ran `npm ci`, so the files below are the ones that
 * do not open a SQLite state file themselves. The SQLite store's own tests run in the main suite.
 */
import { spawnSync } from "node:child_process"
import console from "node:console"
import * as path from "node:path"
import process from "node:process"
import { install } from "./npm-install.mjs"

const ROOT = path.resolve(import.meta.dirname, "..")
const TOOL = path.join(ROOT, "scripts", "node22")

// Each line covers something that depends on the Node.js runtime: streams and backpressure, worker threads (the
// encoder thread), child processes and signals, fetch/undici (AWS SDK), zlib and WebAssembly (the zstd codec, in
// every Parquet file these runs write), the embedded server, net.Socket internals (copy-tap.ts reads COPY data off
// postgres.js' socket). Run on the main suite's Node only, as they use the same runtime APIs as the files below:
// the chunk-lane and local-fault files (worker threads, file system), the S3 end-to-end file (test/plugins/sinks runs
// the S3 sink against the S3 test server here), the format unit tests (pure computation; the e2e files below read
// their Parquet, CSV and NDJSON back), the COPY tap's edge cases (the socket path is copy-tap.test.ts), doctor and
// --json events (CLI output).
const FILES = [
  "test/e2e/quickstart.test.ts",
  "test/e2e/cli-run.test.ts",
  "test/e2e/all-types.test.ts",
  "test/e2e/encoder-thread.test.ts",
  "test/e2e/plugins-arrow.test.ts",
  "test/plugins/sinks",
  "test/core/sink",
  "test/plugins/sources/postgres/driver.test.ts",
  "test/embedded-postgres/server.test.ts",
  "test/plugins/sources/postgres/copy-tap.test.ts"
]

const installed = install(TOOL, true)
if (installed !== 0) {
  console.error(`scripts/node22: npm ci failed (exit ${installed})`)
  process.exit(installed)
}
const node22 = path.join(TOOL, "node_modules", "node", "bin", "node")
const version = spawnSync(node22, ["--version"], { encoding: "utf8" }).stdout.trim()
if (!version.startsWith("v22.")) {
  console.error(`scripts/node22: expected Node.js 22, found ${version || "nothing"} at ${node22}`)
  process.exit(1)
}
console.log(`\n── Node.js ${version}: ${FILES.length} test paths ──`)
const result = spawnSync(node22, [path.join(ROOT, "node_modules", "vitest", "vitest.mjs"), "run", ...FILES], {
  cwd: ROOT,
  stdio: "inherit",
  env: { ...process.env, RIVET_TEST_STATE: "postgres" }
})
process.exit(result.status ?? 1)
