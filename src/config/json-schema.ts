import type { AnyFormatPlugin, AnySinkPlugin, AnySourcePlugin } from "../core/plugin.js"
import { blockJsonSchema, type JsonSchema } from "./json-schema-block.js"
import { exportKeys } from "./export-keys.js"
import { keyModes, type ModeList } from "./mode.js"
import { DEFAULT_FORMAT, ExportCore, TopLevel } from "./model.js"

export type { JsonSchema } from "./json-schema-block.js"

/** Every plugin a config may name, for `rivet schema`. */
export interface ConfigPlugins {
  readonly sources: ReadonlyArray<AnySourcePlugin>
  readonly formats: ReadonlyArray<AnyFormatPlugin>
  readonly sinks: ReadonlyArray<AnySinkPlugin>
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
const withTypeKey = (block: JsonSchema, plugin: AnySourcePlugin | AnySinkPlugin): JsonSchema => {
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
const pluginBlock = (what: string, description: string | undefined, plugins: ReadonlyArray<AnySourcePlugin | AnySinkPlugin>) => ({
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

/** The keys each mode requires; a mode whose key has a default from the table requires it with a `query:` only. */
const modeRules = (modes: ModeList): ReadonlyArray<JsonSchema> =>
  modes.flatMap(({ kind, required }) =>
    required === undefined
      ? []
      : [
          {
            if: { properties: { mode: { const: kind } }, required: required.withQuery ? ["mode", "query"] : ["mode"] },
            then: { required: required.keys }
          }
        ]
  )

/** A key of another mode is refused: `chunk_size` needs `mode: chunked`. */
const modeDependencies = (modes: ModeList): JsonSchema =>
  Object.fromEntries(
    [...keyModes(modes)].map(([key, kinds]) => [key, { properties: { mode: { enum: kinds } }, required: ["mode"] }])
  )

/**
 * One `if`/`then` per format: the export's keys are the runtime's (ExportCore) plus the chosen format's, and
 * nothing else — the decoder refuses any other key, whatever the format's schema. Without `format:` the default
 * format's branch applies (`properties` holds vacuously).
 */
const formatBranch = (format: AnyFormatPlugin, shared: JsonSchema): JsonSchema => {
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

const exportSchema = (formats: ReadonlyArray<AnyFormatPlugin>, modes: ModeList): JsonSchema => {
  const core = blockJsonSchema(exportKeys(modes))
  // Every mode's keys follow `mode:`.
  const { format, destination: _, ...ownProperties } = propertiesOf(core)
  const coreProperties = Object.fromEntries(
    Object.entries(ownProperties).flatMap(([key, value]) => [
      [key, value],
      ...(key === "mode" ? modes.flatMap((mode) => Object.entries(propertiesOf(blockJsonSchema(mode.keys)))) : [])
    ])
  )
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
    dependencies: modeDependencies(modes),
    allOf: [
      { oneOf: [{ required: ["table"] }, { required: ["query"] }] },
      ...modeRules(modes),
      ...formats.map((plugin) => formatBranch(plugin, shared))
    ]
  }
}

/**
 * The JSON Schema of a whole config file, generated from the same effect/Schema values that decode it: the top
 * level, the export keys, and the config block of every plugin given (built-ins plus a config's `plugins:`).
 * It describes the file as written; `rivet check` stays the authority (cross-field rules, `${VAR}` values).
 */
export const configJsonSchema = (plugins: ConfigPlugins, modes: ModeList): JsonSchema => {
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
      export: exportSchema(plugins.formats, modes),
      destination: pluginBlock("destination", descriptionOf(destination), plugins.sinks)
    }
  }
}
