import * as fs from "node:fs"
import * as os from "node:os"
import * as path from "node:path"
import { Ajv } from "ajv"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { runCli } from "../../support/cli.js"

const ROOT = path.resolve(import.meta.dirname, "../../..")

// The plugin module lives inside the repository (in the git-ignored .rivet/) so that it resolves `rivet-export/plugin` and
// `effect` like an installed plugin package would; the config lives in a temp directory and names it by path.
const PLUGIN = `import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { defineSink } from "rivet-export/plugin"

export default defineSink({
  type: "tape",
  description: "Writes to a tape drive (schema test plugin)",
  config: Schema.Struct({
    drive: Schema.String.annotations({ description: "Device path of the tape drive." }),
    density: Schema.optional(Schema.Int.annotations({ description: "Recording density in bits per inch." }))
  }),
  make: () => Layer.die("not used by rivet schema")
})
`

let pluginDir: string
let configDir: string

beforeAll(() => {
  const scratch = path.join(ROOT, ".rivet")
  fs.mkdirSync(scratch, { recursive: true })
  pluginDir = fs.mkdtempSync(path.join(scratch, "schema-test-plugin-"))
  fs.writeFileSync(path.join(pluginDir, "tape-sink.mjs"), PLUGIN)
  configDir = fs.mkdtempSync(path.join(os.tmpdir(), "rivet-schema-"))
})

afterAll(() => {
  fs.rmSync(pluginDir, { recursive: true, force: true })
  if (fs.readdirSync(path.dirname(pluginDir)).length === 0) fs.rmdirSync(path.dirname(pluginDir))
  fs.rmSync(configDir, { recursive: true, force: true })
})

const writeConfig = (yaml: string) => {
  const file = path.join(configDir, `rivet-${Math.random().toString(16).slice(2)}.yaml`)
  fs.writeFileSync(file, yaml)
  return file
}

describe("rivet schema", () => {
  it("prints the committed docs/rivet.schema.json (built-in plugins) on stdout", async () => {
    const result = await runCli(["schema"])
    expect(result.code).toBe(0)
    expect(result.stderr).toBe("")
    expect(result.stdout).toBe(fs.readFileSync(path.join(ROOT, "docs", "rivet.schema.json"), "utf8"))
  })

  it("-c includes the config's plugins: a third-party sink's keys, with their descriptions, validate", async () => {
    const plugin = path.join(pluginDir, "tape-sink.mjs")
    // The rest of the config may be unfinished: only plugins: is read.
    const file = writeConfig(`plugins: [${JSON.stringify(plugin)}]\nsource: { type: postgres }\nexports: []\n`)
    const result = await runCli(["schema", "-c", file])
    expect(result.stderr).toBe("")
    expect(result.code).toBe(0)
    const schema = JSON.parse(result.stdout) as { definitions: { destination: { properties: { type: { enum: Array<string> } } } } }
    expect(schema.definitions.destination.properties.type.enum).toEqual(["local", "stdout", "s3", "tape"])
    expect(result.stdout).toContain("Device path of the tape drive.")
    expect(result.stdout).toContain("Writes to a tape drive (schema test plugin)")

    const validate = new Ajv({ allErrors: true, strictRequired: false }).compile(schema)
    const config = (destination: Record<string, unknown>) => ({
      plugins: [plugin],
      source: { type: "postgres", url_env: "DATABASE_URL" },
      exports: [{ name: "orders", table: "orders", destination: { type: "tape", ...destination } }]
    })
    expect(validate(config({ drive: "/dev/st0", density: 6250 })), JSON.stringify(validate.errors)).toBe(true)
    expect(validate(config({ drive: "/dev/st0", speed: 1 }))).toBe(false)
    expect(validate.errors?.map((error) => [error.instancePath, error.keyword])).toContainEqual([
      "/exports/0/destination",
      "additionalProperties"
    ])
    expect(validate(config({}))).toBe(false)
  })

  it("-o writes the schema to a file", async () => {
    const out = path.join(configDir, "rivet.schema.json")
    const result = await runCli(["schema", "-o", out])
    expect(result.code).toBe(0)
    expect(result.stdout).toBe("")
    expect(result.stderr).toBe(`Wrote ${out}\n`)
    expect(fs.readFileSync(out, "utf8")).toBe(fs.readFileSync(path.join(ROOT, "docs", "rivet.schema.json"), "utf8"))
  })

  it("a plugin that cannot be loaded is a config error naming it", async () => {
    const file = writeConfig("plugins: [./no-such-plugin.mjs]\nsource: { type: postgres }\nexports: []\n")
    const result = await runCli(["schema", "-c", file])
    expect(result.code).toBe(1)
    expect(result.stdout).toBe("")
    expect(result.stderr).toContain("Error: plugins[0]: cannot load plugin './no-such-plugin.mjs'")
  })

  it("--help shows an example", async () => {
    const result = await runCli(["schema", "--help"])
    expect(result.code).toBe(0)
    expect(result.stdout).toContain("Example:")
    expect(result.stdout).toContain("rivet schema > rivet.schema.json")
    expect(result.stdout).toContain("# yaml-language-server: $schema=./rivet.schema.json")
  })
})
