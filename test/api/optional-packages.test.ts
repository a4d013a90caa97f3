import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"
import { OPTIONAL_PACKAGES } from "../../src/core/optional-packages.js"

const manifest = JSON.parse(fs.readFileSync(path.resolve(import.meta.dirname, "../../package.json"), "utf8")) as {
  dependencies: Record<string, string>
  devDependencies: Record<string, string>
  peerDependencies: Record<string, string>
  peerDependenciesMeta: Record<string, { optional?: boolean }>
}

describe("optional peer dependencies", () => {
  it.each(Object.entries(OPTIONAL_PACKAGES))("%s is an optional peer in the range the error messages name", (name, range) => {
    expect(manifest.peerDependencies[name]).toBe(range)
    expect(manifest.peerDependenciesMeta[name]?.optional).toBe(true)
    expect(manifest.dependencies[name]).toBeUndefined()
    // The checkout's own `npm install` still has it, for the README's embedded demo and the tests.
    expect(manifest.devDependencies[name]).toBeDefined()
  })
})
