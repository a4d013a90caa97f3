import type { FormatPlugin, SinkPlugin, SourcePlugin } from "../core/plugin.js"
import { blockJsonSchema, type JsonSchema } from "./json-schema-block.js"
import { KEY_MODES } from "./mode.js"
import { DEFAULT_FORMAT, ExportCore, TopLevel } from "./model.js"

export type { JsonSchema } from "./json-schema-block.js"

/** Every plugin a config may name, for `rivet schema`. */
export interface ConfigPlugins {
  readonly sources: ReadonlyArray<SourcePlugin>
  readonly formats: ReadonlyArray<FormatPlugin>
  readonly sinks: ReadonlyArray<SinkPlugin>
}

/**
 * Draft-07: the newest draft yaml-language-server (the VS Code YAML extension) implements; ajv's default too.
 * Unknown keys are refused per export with `if`/`then` branches that each list every key they allow, because
 * draft-07 has no `unevaluatedProperties`.
 */
export const JSON_SCHEMA_DRAFT = "http://json-schema.org/draft-07/schema#"

const isObject = (value: unknown): value is JsonSchema =>
  value !== null && typeof value === "object" && !Array.isArray(value)

const propertiesOf = (schema: JsonSchema): JsonSchema => (isObject(schema["properties"]) ? schema["properties"] : {})

const requiredOf = (schema: JsonSchema): ReadonlyArray<string> =>
  Array.isArray(schema["required"]) ? schema["required"].filter((key): key is string => typeof key === "string") : []

const descriptionOf = (schema: unknown): string | undefined =>
  isObject(schema) && typeof schema["description"] === "string" ? schema["description"] : undefined

/**
 * A plugin's block plus its `type` key. The decoder hands the block to the plugin without `type`; in the schema
 * it has to be listed, or `additionalProperties: false` would refuse it. A block that is not a plain object
 * schema (a plugin's union, say) cannot take the key and accepts anything; the decoder still checks it.
 */
const withTypeKey = (block: JsonSchema, plugin: SourcePlugin | SinkPlugin): JsonSchema => {
  const typeProperty = { const: plugin.type, description: plugin.description ?? descriptionOf(block) }
  if (isObject(block["properties"])) {
    const { type: _, ...own } = block["properties"]
    return { ...block, properties: { type: typeProperty, ...own }, required: ["type", ...requiredOf(block)] }
  }
  for (const keyword of ["anyOf", "oneOf"]) {
    const members = block[keyword]
    if (Array.isArray(members) && members.every((member) => isObject(member) && isObject(member["properties"]))) {
      return { ...block, [keyword]: members.map((member: JsonSchema) => withTypeKey(member, plugin)) }
    }
  }
  return { properties: { type: typeProperty }, description: descriptionOf(block) }
}

/** A block whose `type` key picks the plugin that decodes the rest (`source`, `destination`). */
const pluginBlock = (what: string, description: string | undefined, plugins: ReadonlyArray<SourcePlugin | SinkPlugin>) => ({
  type: "object",
  ...(description === undefined ? {} : { description }),
  required: ["type"],
  properties: {
    type: { type: "string", enum: plugins.map((plugin) => plugin.type), description: `The ${what} plugin.` }
  },
  allOf: plugins.map((plugin) => ({
    if: { properties: { type: { const: plugin.type } }, required: ["type"] },
    then: withTypeKey(blockJsonSchema(plugin.config), plugin)
  }))
})

/** What `decodeMode` requires per mode; a chunked or keyset export with a `query:` must name its key. */
const MODE_REQUIRES: ReadonlyArray<{ readonly mode: string; readonly keys: ReadonlyArray<string>; readonly withQuery?: true }> = [
  { mode: "incremental", keys: ["cursor_column"] },
  { mode: "time_window", keys: ["time_column", "days_window"] },
  { mode: "chunked", keys: ["chunk_column"], withQuery: true },
  { mode: "keyset", keys: ["key_columns"], withQuery: true }
]

const modeRules = (): ReadonlyArray<JsonSchema> =>
  MODE_REQUIRES.map(({ mode, keys, withQuery }) => ({
    if: { properties: { mode: { const: mode } }, required: withQuery ? ["mode", "query"] : ["mode"] },
    then: { required: keys }
  }))

/** A key of another mode is refused: `chunk_size` needs `mode: chunked`. */
const modeDependencies = (): JsonSchema =>
  Object.fromEntries(
    Object.entries(KEY_MODES).map(([key, modes]) => [key, { properties: { mode: { enum: modes } }, required: ["mode"] }])
  )

/**
 * One `if`/`then` per format: the export's keys are the runtime's (ExportCore) plus the chosen format's, and
 * nothing else — the decoder refuses any other key, whatever the format's schema. Without `format:` the default
 * format's branch applies (`properties` holds vacuously).
 */
const formatBranch = (format: FormatPlugin, shared: JsonSchema): JsonSchema => {
  const block = blockJsonSchema(format.config)
  const when = { properties: { format: { const: format.type } } }
  const { type: _type, properties, required: _required, additionalProperties: _extra, description: _d, title: _t, ...constraints } = block
  const formatRequired = requiredOf(block)
  return {
    if: format.type === DEFAULT_FORMAT ? when : { ...when, required: ["format"] },
    then: {
      // A block that is not a plain object schema (`Schema.Struct({})` gives anyOf object/array) owns no keys.
      ...(isObject(properties) ? constraints : {}),
      properties: { ...(isObject(properties) ? properties : {}), ...shared },
      ...(formatRequired.length > 0 ? { required: formatRequired } : {}),
      additionalProperties: false
    }
  }
}

const exportSchema = (formats: ReadonlyArray<FormatPlugin>): JsonSchema => {
  const core = blockJsonSchema(ExportCore)
  const { format, destination: _, ...coreProperties } = propertiesOf(core)
  const formatTypes = formats.map((plugin) => plugin.type)
  const shared = {
    ...coreProperties,
    format: { ...(isObject(format) ? format : {}), enum: formatTypes },
    destination: { $ref: "#/definitions/destination" }
  }
  return {
    type: "object",
    description: "One export: what to read (table or query), how (mode), the format and the destination.",
    required: requiredOf(core),
    properties: { format: { type: "string", enum: formatTypes } },
    dependencies: modeDependencies(),
    allOf: [
      { oneOf: [{ required: ["table"] }, { required: ["query"] }] },
      ...modeRules(),
      ...formats.map((plugin) => formatBranch(plugin, shared))
    ]
  }
}

/**
 * The JSON Schema of a whole config file, generated from the same effect/Schema values that decode it: the top
 * level, the export keys, and the config block of every plugin given (built-ins plus a config's `plugins:`).
 * It describes the file as written; `rivet check` stays the authority (cross-field rules, `${VAR}` values).
 */
export const configJsonSchema = (plugins: ConfigPlugins): JsonSchema => {
  const top = blockJsonSchema(TopLevel)
  const { source, exports, ...topProperties } = propertiesOf(top)
  const destination = propertiesOf(blockJsonSchema(ExportCore))["destination"]
  return {
    $schema: JSON_SCHEMA_DRAFT,
    title: "Rivet config",
    description: "A Rivet config: the source to read, the exports to write and optional plugins (docs/config.md).",
    type: "object",
    required: requiredOf(top),
    properties: {
      source: { $ref: "#/definitions/source" },
      exports: { ...(isObject(exports) ? exports : {}), minItems: 1, items: { $ref: "#/definitions/export" } },
      ...topProperties
    },
    additionalProperties: false,
    definitions: {
      source: pluginBlock("source", descriptionOf(source), plugins.sources),
      export: exportSchema(plugins.formats),
      destination: pluginBlock("destination", descriptionOf(destination), plugins.sinks)
    }
  }
}
