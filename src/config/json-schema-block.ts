import * as JSONSchema from "effect/JSONSchema"
import * as Option from "effect/Option"
import type * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"

/** A JSON Schema node (draft-07), as plain JSON. */
export type JsonSchema = { [key: string]: unknown }

const isObject = (value: unknown): value is JsonSchema =>
  value !== null && typeof value === "object" && !Array.isArray(value)

/**
 * The JSON Schema of one config block (a plugin's block, the export keys, the top level), draft-07, with every
 * `$ref` inlined: editors (yaml-language-server) ignore keywords beside a draft-07 `$ref`, and effect puts
 * descriptions and bounds there. `JSONSchema.make` describes the encoded side of transformations, which is what a
 * user writes in YAML (`256MiB` for a ByteSize, a string for a Redacted URL).
 */
export const blockJsonSchema = (schema: Schema.Schema.AnyNoContext): JsonSchema => {
  const { $defs, $schema: _, ...root } = JSONSchema.make(schema, { target: "jsonSchema7" }) as unknown as JsonSchema
  const definitions = isObject($defs) ? $defs : {}
  const inlined = tidy(inline(root, definitions, [])) as JsonSchema
  applyDescriptions(inlined, [], collectDescriptions(schema.ast))
  return inlined
}

const REF = "#/$defs/"

const inline = (node: unknown, definitions: JsonSchema, resolving: ReadonlyArray<string>): unknown => {
  if (Array.isArray(node)) return node.map((item) => inline(item, definitions, resolving))
  if (!isObject(node)) return node
  const { $ref, ...rest } = node
  const siblings = Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, inline(value, definitions, resolving)]))
  if (typeof $ref !== "string" || !$ref.startsWith(REF)) return $ref === undefined ? siblings : { $ref, ...siblings }
  const name = $ref.slice(REF.length).replace(/~1/g, "/").replace(/~0/g, "~")
  // A recursive schema cannot be inlined; its inner occurrence accepts anything (the decoder still checks it).
  if (resolving.includes(name) || !isObject(definitions[name])) return siblings
  const target = inline(definitions[name], definitions, [...resolving, name]) as JsonSchema
  return { ...target, ...siblings }
}

/** Keywords that only annotate: a merge may override them without changing what validates. */
const ANNOTATIONS = new Set(["description", "title", "default", "examples", "$comment"])

// effect's own titles (`int`, `between(1, 64)`, `nonEmptyString`) and `$id`s (`/schemas/unknown`) are noise in an
// editor's hover text, and a repeated `$id` is an error for validators.
const AUTO_TITLE = /^[a-z][A-Za-z0-9]*(\(.*\))?$/

const tidy = (node: unknown): unknown => {
  if (Array.isArray(node)) return node.map(tidy)
  if (!isObject(node)) return node
  const out: JsonSchema = {}
  for (const [key, value] of Object.entries(node)) {
    if (key === "$id" && typeof value === "string" && value.startsWith("/schemas/")) continue
    if (key === "title" && typeof value === "string" && AUTO_TITLE.test(value)) continue
    if (key === "required" && Array.isArray(value) && value.length === 0) continue
    out[key] = tidy(value)
  }
  return flattenAllOf(out)
}

/** `{ allOf: [X], description }` → `{ ...X, description }` when X's validation keywords do not clash with the rest. */
const flattenAllOf = (node: JsonSchema): JsonSchema => {
  const { allOf, ...rest } = node
  if (!Array.isArray(allOf) || allOf.length !== 1 || !isObject(allOf[0])) return node
  const only = allOf[0]
  const clash = Object.keys(only).some((key) => key in rest && !ANNOTATIONS.has(key))
  return clash ? node : { ...only, ...rest }
}

// ── Descriptions ─────────────────────────────────────────────────────────────
// JSONSchema.make drops the annotations of a refinement without its own `jsonSchema` annotation (a custom
// `Schema.filter`) and replaces a described `Schema.Trim` by "a string that will be trimmed". The description a
// schema author wrote is the outermost one on each property, so it is read from the AST and put back by path.

type Descriptions = Map<string, string>

const keyOf = (path: ReadonlyArray<string>) => JSON.stringify(path)

const KEYWORDS: ReadonlyArray<SchemaAST.AST> = [SchemaAST.stringKeyword, SchemaAST.numberKeyword, SchemaAST.booleanKeyword]

const ownDescription = (ast: SchemaAST.AST): string | undefined => {
  const description = Option.getOrUndefined(SchemaAST.getDescriptionAnnotation(ast))
  const builtIn = KEYWORDS.find((keyword) => keyword._tag === ast._tag)
  return builtIn && description === builtIn.annotations[SchemaAST.DescriptionAnnotationId] ? undefined : description
}

/** The outermost description of a value schema, looking through refinements, transformations and `| undefined`. */
const descriptionOf = (ast: SchemaAST.AST): string | undefined => {
  const own = ownDescription(ast)
  if (own !== undefined) return own
  switch (ast._tag) {
    case "Refinement":
      return descriptionOf(ast.from)
    case "Transformation":
      return descriptionOf(ast.from) ?? descriptionOf(ast.to)
    case "Union": {
      const members = ast.types.filter((member) => !SchemaAST.isUndefinedKeyword(member))
      return members.length === 1 ? descriptionOf(members[0]!) : undefined
    }
    default:
      return undefined
  }
}

// A description on the property signature wins over one on its value schema; on a transformation the encoded
// side (what the YAML holds) wins over the decoded side (`Redacted(<redacted>)`).
const PROPERTY = 2
const VALUE = 1

const collectDescriptions = (root: SchemaAST.AST): Descriptions => {
  const found = new Map<string, { readonly text: string; readonly rank: number }>()
  const put = (at: ReadonlyArray<string>, text: string | undefined, rank: number) => {
    const existing = found.get(keyOf(at))
    if (text !== undefined && (existing === undefined || existing.rank < rank)) found.set(keyOf(at), { text, rank })
  }
  const walk = (ast: SchemaAST.AST, path: ReadonlyArray<string>): void => {
    switch (ast._tag) {
      case "TypeLiteral":
        for (const property of ast.propertySignatures) {
          const at = [...path, String(property.name)]
          put(at, Option.getOrUndefined(SchemaAST.getDescriptionAnnotation(property)), PROPERTY)
          put(at, descriptionOf(property.type), VALUE)
          walk(property.type, at)
        }
        for (const index of ast.indexSignatures) walk(index.type, [...path, "*"])
        return
      case "Refinement":
        return walk(ast.from, path)
      case "Transformation":
        walk(ast.from, path)
        return walk(ast.to, path)
      case "Union":
        for (const member of ast.types) walk(member, path)
        return
      case "TupleType":
        for (const rest of ast.rest) walk(rest.type, [...path, "[]"])
        return
    }
  }
  walk(root, [])
  return new Map([...found].map(([key, entry]) => [key, entry.text]))
}

const applyDescriptions = (node: unknown, path: ReadonlyArray<string>, descriptions: Descriptions): void => {
  if (!isObject(node)) return
  if (isObject(node["properties"])) {
    for (const [key, property] of Object.entries(node["properties"])) {
      const at = [...path, key]
      const description = descriptions.get(keyOf(at))
      if (description !== undefined && isObject(property)) property["description"] = description
      applyDescriptions(property, at, descriptions)
    }
  }
  if (isObject(node["additionalProperties"])) applyDescriptions(node["additionalProperties"], [...path, "*"], descriptions)
  if (isObject(node["items"])) applyDescriptions(node["items"], [...path, "[]"], descriptions)
  for (const keyword of ["anyOf", "oneOf", "allOf"]) {
    const members = node[keyword]
    if (Array.isArray(members)) for (const member of members) applyDescriptions(member, path, descriptions)
  }
}
