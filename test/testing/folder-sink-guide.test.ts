/** The sink written step by step in docs/plugin-authoring.md (test/fixtures/folder-sink) passes the conformance suite. */
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { runSinkConformance } from "rivet-export/testing"
import { afterAll } from "vitest"
import folder from "../fixtures/folder-sink/index.js"

const root = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-folder-"))
const layerFor = (dir: string) =>
  folder.make(Effect.runSync(Schema.decodeUnknown(folder.config)({ root: dir, block_size: 64 * 1024 })), {
    configDir: process.cwd(),
    env: {}
  })

const walk = (dir: string, prefix = ""): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) =>
    entry.isDirectory() ? walk(path.join(dir, entry.name), `${prefix}${entry.name}/`) : [`${prefix}${entry.name}`]
  )

afterAll(() => fs.rmSync(root, { recursive: true, force: true }))

runSinkConformance("folder sink (docs/plugin-authoring.md)", {
  makeLayer: () => layerFor(root),
  readBack: async (key) => (fs.existsSync(path.join(root, key)) ? new Uint8Array(fs.readFileSync(path.join(root, key))) : undefined),
  listKeys: async () => walk(root),
  missingDestinationLayer: () => layerFor(path.join(root, "does-not-exist")),
  blockCount: 4
})
