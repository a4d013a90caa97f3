import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as fs from "node:fs"
import * as path from "node:path"
import { Ajv, type ErrorObject } from "ajv"
import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import * as Layer from "effect/Layer"
import * as Schema from "effect/Schema"
import { beforeAll, describe, expect, it } from "vitest"
import * as YAML from "yaml"
import { loadAllPlugins } from "../../src/registry/all-plugins.js"
import { validateConfigValue as validateWith } from "../../src/registry/load-config.js"
import { configJsonSchema, type JsonSchema } from "../../src/config/json-schema.js"
import { MODES } from "../../src/engine/modes/kinds/list.js"
import { type AnyPlugin, defineFormat, defineSource } from "../../src/core/plugin.js"

/** Decodes as the CLI does, with Node's file system for the plugins named by path. */
const validateConfigValue = (...args: Parameters<typeof validateWith>) => Effect.provide(validateWith(...args), NodeFileSystem.layer)

const ROOT = path.resolve(import.meta.dirname, "../..")
const EXAMPLES = path.join(ROOT, "examples")
const COMMITTED = path.join(ROOT, "docs", "rivet.schema.json")

let schema: JsonSchema
let validate: (value: unknown) => ReadonlyArray<ErrorObject>

beforeAll(async () => {
  schema = configJsonSchema(await Effect.runPromise(Effect.provide(loadAllPlugins([], ROOT), NodeFileSystem.layer)), MODES)
  // strictRequired is off: `required: [table]` inside a oneOf names a key declared by the enclosing schema.
  const compiled = new Ajv({ allErrors: true, strict: true, strictRequired: false }).compile(schema)
  validate = (value) => (compiled(value) ? [] : [...(compiled.errors ?? [])])
})

/** A valid config to mutate: one parquet export to a local directory. */
const base = (): Record<string, unknown> & { exports: Array<Record<string, unknown>> } => ({
  source: { type: "postgres", url_env: "DATABASE_URL" },
  exports: [{ name: "orders", table: "orders", destination: { type: "local", path: "out/orders" } }]
})

const withExport = (fields: Record<string, unknown>) => {
  const config = base()
  config.exports[0] = { ...config.exports[0], ...fields }
  return config
}

/** Does the decoder (the authority) accept the config? Nothing connects. */
const decodes = (value: unknown) =>
  Effect.runPromise(validateConfigValue(value, ROOT, "(test)", { env: { DATABASE_URL: "postgres://x@127.0.0.1:1/db" } })).then(
    Either.isRight
  )

const examples = fs
  .readdirSync(EXAMPLES, { recursive: true, encoding: "utf8" })
  .filter((file) => /\.ya?ml$/.test(file))
  // Kubernetes manifests, not Rivet configs: test/examples/distributed-recipes.test.ts decodes the config they carry.
  .filter((file) => !file.startsWith("kubernetes/"))

describe("the config JSON Schema", () => {
  it("compiles in ajv's strict mode as draft-07", () => {
    expect(schema["$schema"]).toBe("http://json-schema.org/draft-07/schema#")
  })

  it("is the committed docs/rivet.schema.json (run `npm run schema` after changing a config schema)", () => {
    const committed = fs.readFileSync(COMMITTED, "utf8")
    expect(committed, "docs/rivet.schema.json is stale: run `npm run schema`").toBe(`${JSON.stringify(schema, null, 2)}\n`)
  })

  it.each(examples)("accepts examples/%s", (file) => {
    const value: unknown = YAML.parse(fs.readFileSync(path.join(EXAMPLES, file), "utf8"))
    expect(validate(value)).toEqual([])
  })

  it("found example configs to check", () => expect(examples.length).toBeGreaterThan(0))

  /** [what, config, instancePath of an error, keyword, the offending key or value when relevant] */
  const invalid: ReadonlyArray<readonly [string, unknown, string, string, string?]> = [
    ["unknown destination key", withExport({ destination: { type: "local", pth: "x" } }), "/exports/0/destination", "additionalProperties", "pth"],
    ["unknown export key", withExport({ compresion: "gzip" }), "/exports/0", "additionalProperties", "compresion"],
    ["unknown top-level key", { ...base(), export: [] }, "", "additionalProperties", "export"],
    ["unknown source key", { ...base(), source: { type: "postgres", url_env: "X", hostname: "db" } }, "/source", "additionalProperties", "hostname"],
    ["wrong type", withExport({ batch_size: "many" }), "/exports/0/batch_size", "type"],
    ["out of range", withExport({ parallel: 100, mode: "chunked" }), "/exports/0/parallel", "maximum"],
    ["unknown destination type", withExport({ destination: { type: "lokal", path: "x" } }), "/exports/0/destination/type", "enum"],
    ["unknown source type", { ...base(), source: { type: "oracle" } }, "/source/type", "enum"],
    ["unknown format", withExport({ format: "parket" }), "/exports/0/format", "enum"],
    ["a key of the wrong format", withExport({ format: "csv", row_group_size: 1000 }), "/exports/0", "additionalProperties", "row_group_size"],
    ["csv with zstd", withExport({ format: "csv", compression: "zstd" }), "/exports/0/compression", "enum"],
    ["a bad size", withExport({ max_file_size: "12 parsecs" }), "/exports/0/max_file_size", "pattern"],
    ["a bad duration", withExport({ mode: "incremental", cursor_column: "id", cursor_lag: "soon" }), "/exports/0/cursor_lag", "pattern"],
    ["a key of another mode", withExport({ chunk_size: 10 }), "/exports/0", "required", "mode"],
    ["a mode without its key", withExport({ mode: "incremental" }), "/exports/0", "required", "cursor_column"],
    ["table and query", withExport({ query: "select 1" }), "/exports/0", "oneOf"],
    ["an unsafe export name", withExport({ name: "../etc" }), "/exports/0/name", "pattern"],
    ["no exports", { ...base(), exports: [] }, "/exports", "minItems"],
    ["stdout with a key", withExport({ destination: { type: "stdout", path: "x" } }), "/exports/0/destination", "additionalProperties", "path"],
    ["s3 without bucket", withExport({ destination: { type: "s3", region: "us-east-1" } }), "/exports/0/destination", "required", "bucket"]
  ]

  it.each(invalid)("refuses %s, pointing at the right place", async (_what, config, instancePath, keyword, detail) => {
    const errors = validate(config)
    const match = errors.find((error) => error.instancePath === instancePath && error.keyword === keyword)
    expect(match, JSON.stringify(errors, null, 2)).toBeDefined()
    if (detail !== undefined) expect(JSON.stringify(match!.params)).toContain(detail)
    expect(await decodes(config)).toBe(false) // the decoder refuses it too
  })

  /** Valid configs that exercise every key: the schema must never be stricter than the decoder. */
  const valid: ReadonlyArray<readonly [string, unknown]> = [
    ["the base config", base()],
    ["every core key", withExport({
      mode: "chunked", chunk_column: "id", chunk_size: 5000, parallel: 4, chunk_checkpoint: true, skip_empty: true,
      batch_size: 20000, max_file_size: "1.5 GB", columns: { amount: { type: "decimal(38,9)" } }, on_schema_drift: "fail",
      quality: { row_count_min: 1, row_count_max: 10, null_ratio_max: { email: 0.5 }, unique_columns: ["id"] },
      compression: "gzip", compression_level: 9, row_group_size: 1000
    })],
    ["incremental", withExport({ mode: "incremental", cursor_column: "updated_at", cursor_lag: "5m" })],
    ["incremental, lag in seconds", withExport({ mode: "incremental", cursor_column: "updated_at", cursor_lag: 30 })],
    ["keyset on a query", withExport({ table: undefined, query: "SELECT * FROM t", mode: "keyset", key_columns: ["a", "b"], page_size: 10 })],
    ["time_window", withExport({ mode: "time_window", time_column: "created_at", days_window: 0 })],
    ["csv", withExport({ format: "csv", compression: "gzip", max_file_size: 1048576 })],
    ["ndjson to stdout", withExport({ format: "ndjson", destination: { type: "stdout" } })],
    ["explicit parquet", withExport({ format: "parquet", compression: "snappy" })],
    ["s3 with every key", withExport({
      destination: {
        type: "s3", bucket: "my-bucket", prefix: "exports/daily", region: "us-east-1", endpoint: "http://localhost:9000",
        access_key_env: "AK", secret_key_env: "SK", session_token_env: "ST", allow_anonymous: true, part_size: "16MiB",
        upload_concurrency: 8, storage_class: "STANDARD_IA", server_side_encryption: "aws:kms", kms_key_id: "k", tags: { team: "data" }
      }
    })],
    ["a URL source with options", { ...base(), source: { type: "postgres", url: "postgres://u:p@db/x", schema: "app", statement_timeout_s: 0, lock_timeout_s: 5, application_name: "r" } }],
    ["the embedded demo source", { ...base(), source: { type: "postgres", embedded: { data_dir: ".demo", port: 5433 } } }],
    ["plugins list", { ...base(), plugins: [] }]
  ]

  it.each(valid)("accepts %s, as the decoder does", async (_what, config) => {
    const plain = JSON.parse(JSON.stringify(config)) as unknown // drops keys set to undefined
    expect(await decodes(plain)).toBe(true)
    expect(validate(plain)).toEqual([])
  })

  it("carries a description for every key (editor hover text), from the schema annotations", () => {
    const missing: Array<string> = []
    const walk = (node: unknown, at: string): void => {
      if (Array.isArray(node)) return node.forEach((item, index) => walk(item, `${at}/${index}`))
      if (node === null || typeof node !== "object") return
      const schemaNode = node as JsonSchema
      const properties = schemaNode["properties"]
      if (properties !== null && typeof properties === "object" && !at.endsWith("/if")) {
        for (const [name, property] of Object.entries(properties as Record<string, JsonSchema>)) {
          if (property["description"] === undefined && property["$ref"] === undefined) missing.push(`${at}/properties/${name}`)
          walk(property, `${at}/properties/${name}`)
        }
      }
      for (const key of ["then", "allOf", "anyOf", "oneOf", "items", "additionalProperties"]) walk(schemaNode[key], `${at}/${key}`)
      for (const [name, definition] of Object.entries((schemaNode["definitions"] ?? {}) as JsonSchema)) {
        walk(definition, `${at}/definitions/${name}`)
      }
    }
    walk(schema, "#")
    // The base `format` enum only flags an unknown format; the described key is in each format's branch.
    expect(missing).toEqual(["#/definitions/export/properties/format"])
    const exportText = JSON.stringify((schema["definitions"] as Record<string, JsonSchema>)["export"])
    expect(exportText).toContain("The largest size of a part") // max_file_size (a transformation)
    expect(exportText).toContain("SQL query to export") // query (a refinement of Trim)
    expect(JSON.stringify(schema)).toContain("Connection URL") // url (a Redacted)
  })

  it("includes plugins passed in code; a format that owns no keys still refuses unknown export keys", async () => {
    const plugins = [
      defineFormat({ type: "blob", config: Schema.Struct({}), make: () => Layer.die("unused") }),
      defineSource({
        type: "sqlite",
        description: "A SQLite file",
        config: Schema.Struct({ file: Schema.String.annotations({ description: "Path of the database file." }) }),
        make: () => Layer.die("unused")
      })
    ] as unknown as ReadonlyArray<AnyPlugin>
    const withPlugins = configJsonSchema(await Effect.runPromise(Effect.provide(loadAllPlugins([], ROOT, plugins), NodeFileSystem.layer)), MODES)
    const check = new Ajv({ allErrors: true, strictRequired: false }).compile(withPlugins)
    const config = (source: Record<string, unknown>, fields: Record<string, unknown>) => ({
      source,
      exports: [{ name: "t", table: "t", format: "blob", destination: { type: "stdout" }, ...fields }]
    })
    expect(check(config({ type: "sqlite", file: "x.db" }, {})), JSON.stringify(check.errors)).toBe(true)
    expect(check(config({ type: "sqlite", file: "x.db" }, { compression: "gzip" }))).toBe(false)
    expect(check.errors).toContainEqual(expect.objectContaining({ instancePath: "/exports/0", keyword: "additionalProperties" }))
    expect(check(config({ type: "sqlite" }, {}))).toBe(false)
    expect(check.errors).toContainEqual(expect.objectContaining({ instancePath: "/source", keyword: "required" }))
    expect(JSON.stringify(withPlugins)).toContain("Path of the database file.")
  })

  it("describes the YAML side of transformations: sizes, durations and secrets as written", () => {
    expect(validate(withExport({ max_file_size: "256MiB" }))).toEqual([])
    expect(validate(withExport({ max_file_size: 1024 }))).toEqual([])
    expect(validate(withExport({ max_file_size: 0 })).length).toBeGreaterThan(0)
    expect(validate({ ...base(), source: { type: "postgres", url: "postgres://a:b@h/d" } })).toEqual([])
    expect(validate({ ...base(), source: { type: "postgres", url: 42 } }).length).toBeGreaterThan(0)
  })
})
