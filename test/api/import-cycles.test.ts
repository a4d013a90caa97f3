import * as fs from "node:fs"
import * as path from "node:path"
import ts from "typescript"
import { describe, expect, it } from "vitest"

const ROOT = path.resolve(import.meta.dirname, "../..")

const sourceFiles = (dir: string): Array<string> =>
  fs.readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name)
    if (entry.isDirectory()) return sourceFiles(full)
    return entry.name.endsWith(".ts") && !entry.name.endsWith(".d.ts") ? [full] : []
  })

/**
 * Every relative import of each file, type-only and dynamic imports included (a type import still ties two files'
 * meaning together), resolved from the `.js` specifier to the `.ts` file beside it.
 */
const importGraph = (files: ReadonlyArray<string>): ReadonlyMap<string, ReadonlyArray<string>> => {
  const known = new Set(files)
  return new Map(
    files.map((file) => {
      const { importedFiles } = ts.preProcessFile(fs.readFileSync(file, "utf8"), true, true)
      const targets = importedFiles
        .map((imported) => imported.fileName)
        .filter((specifier) => specifier.startsWith("."))
        .map((specifier) => path.resolve(path.dirname(file), specifier.replace(/\.js$/, ".ts")))
        .filter((target) => known.has(target))
      return [file, [...new Set(targets)]]
    })
  )
}

/** The strongly connected components of more than one file, or of one file importing itself (Tarjan). */
const importCircles = (graph: ReadonlyMap<string, ReadonlyArray<string>>): Array<Array<string>> => {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: Array<string> = []
  const onStack = new Set<string>()
  const circles: Array<Array<string>> = []
  const visit = (node: string) => {
    index.set(node, index.size)
    low.set(node, index.get(node)!)
    stack.push(node)
    onStack.add(node)
    for (const next of graph.get(node) ?? []) {
      if (!index.has(next)) {
        visit(next)
        low.set(node, Math.min(low.get(node)!, low.get(next)!))
      } else if (onStack.has(next)) {
        low.set(node, Math.min(low.get(node)!, index.get(next)!))
      }
    }
    if (low.get(node) !== index.get(node)) return
    const component: Array<string> = []
    let member: string
    do {
      member = stack.pop()!
      onStack.delete(member)
      component.push(member)
    } while (member !== node)
    if (component.length > 1 || (graph.get(node) ?? []).includes(node)) circles.push(component.sort())
  }
  for (const node of graph.keys()) if (!index.has(node)) visit(node)
  return circles
}

describe("import circles", () => {
  it("src/ has none, type imports included", () => {
    const circles = importCircles(importGraph(sourceFiles(path.join(ROOT, "src"))))
    expect(circles.map((circle) => circle.map((file) => path.relative(ROOT, file)))).toEqual([])
  })

  it("the check finds a circle made of type imports alone", () => {
    const files = ["a.ts", "b.ts"].map((name) => path.join(ROOT, "test/fixtures/import-circle", name))
    expect(importCircles(importGraph(files))).toEqual([files])
  })
})
