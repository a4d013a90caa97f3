import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { describe, expect, it } from "vitest"
import * as YAML from "yaml"
import { validateConfigValue as validateWith } from "../../../src/registry/load-config.js"
import type { DiscoveredTable, Discovery } from "../../../src/core/discovery/model.js"
import { planInit, updatedAtColumn } from "../../../src/commands/init/plan.js"
import { renderInitYaml } from "../../../src/commands/init/render.js"

/** Decodes as the CLI does, with Node's file system for the plugins named by path. */
const validateConfigValue = (...args: Parameters<typeof validateWith>) => Effect.provide(validateWith(...args), NodeFileSystem.layer)

const int = (name: string, kind: "int32" | "int64" = "int32") => ({ name, sourceType: kind === "int32" ? "int4" : "int8", type: { kind } })
const text = (name: string) => ({ name, sourceType: "text", type: { kind: "string" as const } })

const table = (overrides: Partial<DiscoveredTable> & Pick<DiscoveredTable, "name">): DiscoveredTable => ({
  schema: "public",
  estimatedRows: 10,
  estimateSource: "count",
  columns: [int("id")],
  primaryKey: ["id"],
  ...overrides
})

const render = (tables: ReadonlyArray<DiscoveredTable>) => {
  const discovery: Discovery = { sourceType: "postgres", displaySource: "postgres://app:***@db/shop", tables, skipped: [] }
  const plan = planInit(discovery, { urlEnv: "DATABASE_URL", fileName: "rivet.yaml", generatedAt: new Date(0) })
  return { plan, text: renderInitYaml(plan) }
}

const decode = (yamlText: string) =>
  Effect.runPromise(
    validateConfigValue(YAML.parse(yamlText), "/tmp", "init", { env: { DATABASE_URL: "postgres://app@db/shop" } })
  )

describe("rivet init: mode choice and rendering", () => {
  it("picks full / chunked (+parallel) / keyset / full with max_file_size by size and key", () => {
    const { plan } = render([
      table({ name: "small", estimatedRows: 100_000 }),
      table({ name: "big_int", estimatedRows: 100_001 }),
      table({ name: "huge_int", estimatedRows: 5_000_001, columns: [int("id", "int64")] }),
      table({ name: "text_key", estimatedRows: 200_000, columns: [text("code")], primaryKey: ["code"] }),
      table({ name: "composite", estimatedRows: 200_000, columns: [int("a"), int("b")], primaryKey: ["a", "b"] }),
      table({ name: "no_key", estimatedRows: 200_000, primaryKey: [] })
    ])
    const [small, bigInt, hugeInt, textKey, composite, noKey] = plan.value.exports
    expect(small).toMatchObject({ mode: "full" })
    expect(small).not.toHaveProperty("max_file_size")
    expect(bigInt).toMatchObject({ mode: "chunked", chunk_column: "id", chunk_size: 100_000, chunk_checkpoint: true })
    expect(bigInt).not.toHaveProperty("parallel")
    expect(hugeInt).toMatchObject({ mode: "chunked", parallel: 2 })
    expect(textKey).toMatchObject({ mode: "keyset", key_columns: ["code"], chunk_checkpoint: true })
    expect(composite).toMatchObject({ mode: "keyset", key_columns: ["a", "b"] })
    expect(noKey).toMatchObject({ mode: "full", max_file_size: "256MiB" })
  })

  it("finds an updated_at-like timestamp column, preferring the most specific name", () => {
    const ts = (name: string) => ({ name, sourceType: "timestamptz", type: { kind: "timestamptz" as const } })
    expect(updatedAtColumn(table({ name: "t", columns: [ts("created_at"), ts("modified"), ts("UpdatedAt")] }))?.name).toBe("UpdatedAt")
    expect(updatedAtColumn(table({ name: "t", columns: [ts("last_update")] }))?.name).toBe("last_update")
    expect(updatedAtColumn(table({ name: "t", columns: [text("updated_at")] }))).toBeUndefined()
  })

  it("quotes and escapes awkward names so the YAML decodes to exactly those names, comments stay comments", async () => {
    const { text: yaml, plan } = render([
      table({
        name: "weird\nname: #1",
        schema: "sales ops",
        estimatedRows: 300_000,
        columns: [text("key: ${HOME}"), { name: "amount #", sourceType: "numeric", problem: { kind: "precision", reason: "no precision", override: "decimal(38,9)" } }],
        primaryKey: ["key: ${HOME}"]
      }),
      table({ name: "a$b", columns: [int("id"), { name: "yes", sourceType: "point", problem: { kind: "type", reason: "no type", override: "string" } }] }),
      table({ name: "a_b" }),
      table({ name: "a b" })
    ])
    // A newline in a name is shown escaped inside the comment, which would otherwise end there.
    expect(yaml).toContain("# sales ops.weird\\nname: #1: ~300,000 rows")
    const parsed = YAML.parse(yaml) as { exports: Array<Record<string, unknown>> }
    expect(parsed.exports.map((spec) => spec["name"])).toEqual(["weird_name_1", "public_a_b", "a_b", "a_b_2"])
    expect(parsed.exports[0]).toMatchObject({
      query: 'SELECT * FROM "sales ops"."weird\nname: #1"',
      mode: "keyset",
      key_columns: ["key: $${HOME}"],
      columns: { "amount #": { type: "decimal(38,9)" } }
    })
    expect(parsed.exports[1]).toMatchObject({ table: "a$$b", columns: { yes: { type: "string" } } })
    expect(plan.summary.map((entry) => entry.reviews)).toEqual([1, 1, 0, 0])

    const decoded = await decode(yaml)
    if (Either.isLeft(decoded)) throw new Error(decoded.left.map((e) => `${e.path}: ${e.message}`).join("\n"))
    const [first, second] = decoded.right.exports
    expect(first?.query).toBe('SELECT * FROM "sales ops"."weird\nname: #1"')
    expect(first?.mode.settings).toMatchObject({ kind: "keyset", keyColumns: ["key: ${HOME}"] })
    expect(second?.table).toEqual({ name: "a$b" })
  })

  it("writes the schema line first, the env var name and never a URL value", () => {
    const { text: yaml } = render([table({ name: "orders" })])
    expect(yaml.split("\n")[0]).toBe("# yaml-language-server: $schema=./rivet.schema.json")
    expect(YAML.parse(yaml)).toMatchObject({ source: { type: "postgres", url_env: "DATABASE_URL" } })
    expect(yaml).toContain("from postgres://app:***@db/shop")
  })
})
