import { ESLint } from "eslint"
import * as fs from "node:fs"
import * as path from "node:path"
import { describe, expect, it } from "vitest"

const ROOT = path.resolve(import.meta.dirname, "../..")
const FIXTURES = path.join(ROOT, "test/fixtures/boundaries")

/**
 * Lints a fixture as if it were the file `asPath` of the tree, with the project's own eslint config. Fixtures are
 * kept as .ts.txt: their imports resolve only at the path they pretend to have, so the typecheck must not see them.
 */
const lintAs = async (fixture: string, asPath: string) => {
  const eslint = new ESLint({ cwd: ROOT })
  const [result] = await eslint.lintText(fs.readFileSync(path.join(FIXTURES, fixture), "utf8"), {
    filePath: path.join(ROOT, asPath)
  })
  return (result?.messages ?? []).filter((message) => message.ruleId === "no-restricted-imports")
}

describe("the layer boundaries hold in lint", () => {
  it("refuses the engine importing a plugin", async () => {
    const messages = await lintAs("engine-imports-plugin.ts.txt", "src/engine/modes/fixture.ts")
    expect(messages).toHaveLength(1)
    expect(messages[0]?.message).toContain("the engine must not depend on an edge or a plugin")
  })

  it("refuses the engine importing a concrete state store, and lets it import the store's interface", async () => {
    const messages = await lintAs("engine-imports-state-backend.ts.txt", "src/engine/modes/fixture.ts")
    expect(messages.map((message) => message.line)).toEqual([2, 3])
    expect(messages[0]?.message).toContain("the engine sees only the state store's interface")
  })

  it("exempts no engine file: the lanes thread's serving code is held like the rest", async () => {
    const messages = await lintAs("engine-imports-plugin.ts.txt", "src/engine/lanes/serve.ts")
    expect(messages).toHaveLength(1)
  })

  it("refuses the engine importing a command beside the run, and a command importing an edge or a state store", async () => {
    const [engine] = await lintAs("engine-imports-command.ts.txt", "src/engine/modes/fixture.ts")
    expect(engine?.message).toContain("nor on a command beside the run")
    const command = await lintAs("command-imports-edge.ts.txt", "src/commands/fixture.ts")
    expect(command.map((message) => message.line)).toEqual([2, 3])
    expect(command[0]?.message).toContain("the commands beside the run")
    expect(command[1]?.message).toContain("a command sees only the state store's interface")
  })

  it("refuses the state store importing a plugin", async () => {
    expect(await lintAs("engine-imports-plugin.ts.txt", "src/state/fixture.ts")).toHaveLength(1)
  })

  it("refuses the contract and the config model importing the engine", async () => {
    const [core] = await lintAs("contract-imports-engine.ts.txt", "src/core/fixture.ts")
    expect(core?.message).toContain("core/ is the contract")
    const [config] = await lintAs("contract-imports-engine.ts.txt", "src/config/fixture.ts")
    expect(config?.message).toContain("config/ sees only core/")
  })

  it("refuses a plugin importing the engine's internals or another plugin", async () => {
    const messages = await lintAs("plugin-imports-engine.ts.txt", "src/plugins/sources/postgres/fixture.ts")
    expect(messages.map((message) => message.line)).toEqual([2, 3])
    expect(messages[0]?.message).toContain("a plugin sees only the plugin contract")
  })

  it("refuses a plugin or the engine starting the embedded demo server, which only an edge starts", async () => {
    const [source] = await lintAs("imports-embedded-server.ts.txt", "src/plugins/sources/postgres/fixture.ts")
    expect(source?.message).toContain("never the engine, another plugin or the embedded demo server")
    const [engine] = await lintAs("imports-embedded-server.ts.txt", "src/engine/modes/fixture.ts")
    expect(engine?.message).toContain("the engine must not depend on an edge or a plugin")
    expect(await lintAs("imports-embedded-server.ts.txt", "src/registry/fixture.ts")).toEqual([])
  })

  it("refuses the embedded demo server importing a plugin or the engine", async () => {
    const messages = await lintAs("embedded-server-imports-plugin.ts.txt", "src/embedded-postgres/fixture.ts")
    expect(messages.map((message) => message.line)).toEqual([2, 3])
    expect(messages[0]?.message).toContain("embedded-postgres/ sees only core/ and config/")
  })

  it("refuses a built-in plugin importing the config model (third-party plugins see only the contract)", async () => {
    const messages = await lintAs("plugin-imports-config.ts.txt", "src/plugins/sources/mysql/fixture.ts")
    expect(messages.map((message) => message.line)).toEqual([2])
    expect(messages[0]?.message).toContain("nor config/")
  })

  it("lets a plugin import the contract, and an edge import anything", async () => {
    expect(await lintAs("plugin-imports-contract.ts.txt", "src/plugins/sinks/local/fixture.ts")).toEqual([])
    expect(await lintAs("plugin-imports-engine.ts.txt", "src/cli/commands/fixture.ts")).toEqual([])
  })
})
