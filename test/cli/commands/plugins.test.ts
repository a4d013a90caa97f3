import * as fs from "node:fs"
import * as path from "node:path"
import { afterAll, describe, expect, it } from "vitest"
import { runCli, writeConfig } from "../../support/cli.js"

const FIXTURES = path.resolve(import.meta.dirname, "../../fixtures/plugins")
const dirs: Array<string> = []
afterAll(() => {
  for (const dir of dirs) fs.rmSync(dir, { recursive: true, force: true })
})

/** A config holding only a plugins: list — `rivet plugins` must not need the rest. */
const pluginsConfig = (yaml: string) => {
  const file = writeConfig(yaml)
  dirs.push(path.dirname(file))
  return file
}

interface Listing {
  readonly type: string
  readonly origin: string
  readonly description?: string
}

describe("rivet plugins", () => {
  it("lists every built-in type by kind, with its origin and description", async () => {
    const result = await runCli(["plugins"])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    const sections = result.stdout.trim().split("\n\n")
    expect(sections.map((section) => section.split("\n")[0])).toEqual([
      "Sources (source.type)",
      "Formats (exports[].format)",
      "Destinations (exports[].destination.type)"
    ])
    expect(sections[1]!.split("\n").slice(1).map((line) => line.trim().split(/\s+/).slice(0, 2))).toEqual([
      ["csv", "built-in"],
      ["ndjson", "built-in"],
      ["parquet", "built-in"]
    ])
    expect(result.stdout).toMatch(/^ {2}s3 +built-in +AWS S3/m)
    expect(result.stdout).toMatch(/^ {2}postgres +built-in +PostgreSQL/m)
  })

  it("with -c, adds the config's plugins: entries, named as written, resolved from the config's directory", async () => {
    const dir = path.dirname(pluginsConfig(""))
    const relative = path.relative(dir, path.join(FIXTURES, "throwing-format.mjs"))
    const file = path.join(dir, "rivet.yaml")
    fs.writeFileSync(file, `plugins:\n  - ${relative}\n  - ${path.join(FIXTURES, "journal-sink.mjs")}\n`)
    const result = await runCli(["plugins", "-c", file, "--json"])
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    const listed = JSON.parse(result.stdout) as Record<"sources" | "formats" | "sinks", ReadonlyArray<Listing>>
    expect(listed.formats.map((entry) => [entry.type, entry.origin])).toEqual([
      ["csv", "built-in"],
      ["explode", `'${relative}'`],
      ["ndjson", "built-in"],
      ["parquet", "built-in"]
    ])
    expect(listed.sinks.find((entry) => entry.type === "journal")).toEqual({
      type: "journal",
      origin: `'${path.join(FIXTURES, "journal-sink.mjs")}'`,
      description: "Test sink that journals every call"
    })
  })

  it("a plugin that cannot be loaded is an error naming the entry, exit 1", async () => {
    const file = pluginsConfig(`plugins: ["${path.join(FIXTURES, "no-default.mjs")}"]\n`)
    const result = await runCli(["plugins", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain(`Error: plugins[0]: plugin '${path.join(FIXTURES, "no-default.mjs")}' has no default export`)
  })

  it("substitutes ${VAR} in plugins: entries, and names a variable that is not set", async () => {
    const file = pluginsConfig("plugins: [\"${RIVET_TEST_PLUGIN_DIR}/journal-sink.mjs\"]\n")
    const ok = await runCli(["plugins", "-c", file], { env: { RIVET_TEST_PLUGIN_DIR: FIXTURES } })
    expect(ok.code).toBe(0)
    expect(ok.stdout).toMatch(/^ {2}journal +'.+journal-sink\.mjs' +Test sink/m)
    const missing = await runCli(["plugins", "-c", file])
    expect(missing.code).toBe(1)
    expect(missing.stderr).toContain("environment variable 'RIVET_TEST_PLUGIN_DIR' is not set")
  })
})
