/** Plugin packages reach Rivet through its contract only: their sources import `rivet-export/plugin`, never `rivet-export` or its files. */
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const PLUGINS = path.resolve(import.meta.dirname, "../../plugins")

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const file = path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(file)
    return /\.(ts|mts|js|mjs)$/.test(entry.name) ? [file] : []
  })

/** Every module specifier of `rivet-export` or below it in a file: `import … from`, `export … from`, `import()`. */
const rivetImports = (text: string): Array<string> =>
  [...text.matchAll(/(?:from\s+|import\s*\(\s*|import\s+)["'](rivet-export(?:\/[^"']*)?)["']/g)].map((match) => match[1]!)

const pluginSources = fs
  .readdirSync(PLUGINS, { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && fs.existsSync(path.join(PLUGINS, entry.name, "src")))
  .flatMap((entry) => sourceFiles(path.join(PLUGINS, entry.name, "src")))

describe("plugin packages", () => {
  it("finds the plugin sources it checks", () => {
    expect(pluginSources.length).toBeGreaterThan(5)
  })

  it.each(pluginSources.map((file) => [path.relative(PLUGINS, file), file]))(
    "%s imports Rivet only as rivet-export/plugin",
    (_name, file) => {
      const wrong = rivetImports(fs.readFileSync(file, "utf8")).filter((specifier) => specifier !== "rivet-export/plugin")
      expect(wrong).toEqual([])
    }
  )

  it("the check catches `rivet-export`, `rivet-export/testing` and deep imports", () => {
    const text = [
      'import { defineSink } from "rivet-export"',
      "import type { SinkError } from 'rivet-export/testing'",
      'export { x } from "rivet-export/dist/core/plugin.js"',
      'const m = await import("rivet-export")',
      'import { Sink } from "rivet-export/plugin"',
      'import { other } from "rivet-extra"'
    ].join("\n")
    expect(rivetImports(text)).toEqual(["rivet-export", "rivet-export/testing", "rivet-export/dist/core/plugin.js", "rivet-export", "rivet-export/plugin"])
  })
})
