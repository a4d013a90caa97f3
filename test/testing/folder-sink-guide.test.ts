/**
 * The sink written step by step in docs/plugin-authoring.md — what `rivet plugin init rivet-sink-folder` writes —
 * passes the conformance suite: this file runs the scaffold's own test (test/sink.test.ts) on its sources.
 */
import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll } from "vitest"
import { scaffoldFiles } from "../../src/cli/plugin-init/scaffold.js"

// Inside the repository (the git-ignored .rivet/), the scaffold's files resolve rivet-export, its /plugin and
// /testing entries, effect and vitest like an installed plugin package does.
const pluginDir = path.resolve(import.meta.dirname, "../../.rivet/folder-sink-guide")
fs.rmSync(pluginDir, { recursive: true, force: true })
for (const [file, text] of scaffoldFiles("rivet-sink-folder", "sink", "folder")) {
  fs.mkdirSync(path.dirname(path.join(pluginDir, file)), { recursive: true })
  fs.writeFileSync(path.join(pluginDir, file), text)
}
afterAll(() => fs.rmSync(pluginDir, { recursive: true, force: true }))

// Importing the test module registers its suite (and its check that the suite registered) in this file.
await import(path.join(pluginDir, "test/sink.test.ts"))
