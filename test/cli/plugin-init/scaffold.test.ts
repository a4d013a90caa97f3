import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { pluginType, scaffoldFiles, scaffoldPlugin } from "../../../src/cli/plugin-init/scaffold.js"

const work = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-plugin-init-"))
afterAll(() => fs.rmSync(work, { recursive: true, force: true }))

const scaffold = (name: string, kind: "sink" | "format" | "source", dir: string) =>
  Effect.runPromise(Effect.either(scaffoldPlugin(name, kind, dir)).pipe(Effect.provide(NodeFileSystem.layer)))

describe("rivet plugin init", () => {
  it("derives the plugin type from the package name", () => {
    expect(pluginType("rivet-sink-folder", "sink")).toBe("folder")
    expect(pluginType("@acme/rivet-format-lines", "format")).toBe("lines")
    expect(pluginType("warehouse", "source")).toBe("warehouse")
  })

  it.each(["sink", "format", "source"] as const)("writes a %s package that depends on rivet-export and Effect 3", async (kind) => {
    const dir = path.join(work, kind)
    const result = await scaffold(`rivet-${kind}-demo`, kind, dir)
    expect(result._tag).toBe("Right")
    const manifest = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8")) as Record<string, Record<string, string>>
    expect(manifest["peerDependencies"]).toMatchObject({ "rivet-export": expect.stringMatching(/^\^0\./), effect: expect.stringMatching(/^\^3\./) })
    expect(Object.keys(manifest["devDependencies"]!)).toEqual(expect.arrayContaining(["@types/node", "typescript", "vitest"]))
    expect(fs.readFileSync(path.join(dir, "src/index.ts"), "utf8")).toContain(`from "rivet-export/plugin"`)
    expect(fs.existsSync(path.join(dir, `test/${kind}.test.ts`))).toBe(true)
    expect(fs.existsSync(path.join(dir, "tsconfig.json"))).toBe(true)
  })

  it("docs/plugin-authoring.md shows the folder sink's files as the scaffold writes them", () => {
    const guide = fs.readFileSync(path.resolve(import.meta.dirname, "../../../docs/plugin-authoring.md"), "utf8")
    const files = scaffoldFiles("rivet-sink-folder", "sink", "folder").filter(([file]) => file.endsWith(".ts"))
    expect(files.length).toBe(5)
    for (const [file, text] of files) expect(guide, file).toContain(`\`\`\`ts\n// ${file}\n${text}\`\`\``)
  })

  it("refuses a directory that is not empty, naming it, and writes nothing there", async () => {
    const dir = path.join(work, "taken")
    fs.mkdirSync(dir)
    fs.writeFileSync(path.join(dir, "notes.txt"), "mine")
    const result = await scaffold("rivet-sink-x", "sink", dir)
    expect(result).toMatchObject({ _tag: "Left", left: { _tag: "ConfigError", path: "--dir", message: `${dir} already exists and is not empty` } })
    expect(fs.readdirSync(dir)).toEqual(["notes.txt"])
  })

  it.each([["Bad_Name"], ["rivet-sink-"], ["my plugin"], ["@scope/rivet-sink-9lives"]])("refuses the name %s", async (name) => {
    const result = await scaffold(name, "sink", path.join(work, "never"))
    expect(result).toMatchObject({ _tag: "Left", left: { _tag: "ConfigError", path: "<name>" } })
    expect(fs.existsSync(path.join(work, "never"))).toBe(false)
  })
})
