import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = path.resolve(import.meta.dirname, "../..")

/**
 * The folders of test/ with a role of their own, not a folder of src/ to mirror: the public API and architecture
 * (api/), the CLI end to end (e2e/), the examples/ programs (examples/), data the tests read (fixtures/) and the
 * helpers they share (support/).
 */
const ROLE_FOLDERS = ["api", "e2e", "examples", "fixtures", "support"]

/** The folders under `dir`, as paths relative to `root`, nested ones included; `skip` (top-level names) not entered. */
const foldersUnder = (root: string, skip: ReadonlyArray<string> = [], dir = root): Array<string> =>
  fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((entry) => entry.isDirectory() && !(dir === root && skip.includes(entry.name)))
    .flatMap((entry) => {
      const full = path.join(dir, entry.name)
      return [path.relative(root, full).split(path.sep).join("/"), ...foldersUnder(root, skip, full)]
    })

const isFolder = (file: string) => fs.statSync(file, { throwIfNoEntry: false })?.isDirectory() === true

describe("test/ mirrors src/", () => {
  it("every folder of unit tests is the path of a folder of src/ (the tests of src/X/y.ts live in test/X/)", () => {
    const unmatched = foldersUnder(path.join(ROOT, "test"), ROLE_FOLDERS)
      .filter((folder) => !isFolder(path.join(ROOT, "src", folder)))
      .map((folder) => `test/${folder}`)
    expect(unmatched, "folders of test/ with no folder of src/ at the same path").toEqual([])
  })

  it("the role folders it leaves out exist, and none of them is also a folder of src/", () => {
    for (const folder of ROLE_FOLDERS) {
      expect(isFolder(path.join(ROOT, "test", folder)), `test/${folder}`).toBe(true)
      expect(fs.existsSync(path.join(ROOT, "src", folder)), `src/${folder}`).toBe(false)
    }
  })
})
