import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"
import { didYouMean } from "../core/did-you-mean.js"
import { ConfigError } from "../core/errors.js"
import { nameShapes } from "./expected.js"
import { rustKeyHint, rustValueHint } from "./rust-keys.js"

const PLAIN_KEY = /^[A-Za-z0-9_-]+$/

/**
 * `exports[1].destination.bucket` from a base path and the segments below it. A key that is not plain (a dot, a
 * bracket, a space — YAML allows any key) is written `["a.b"]`, so the path reads back unambiguously.
 */
export const joinPath = (base: string, segments: ReadonlyArray<PropertyKey>): string =>
  segments.reduce<string>((path, segment) => {
    if (typeof segment === "number") return `${path}[${segment}]`
    const key = String(segment)
    if (!PLAIN_KEY.test(key)) return `${path}[${JSON.stringify(key)}]`
    return path ? `${path}.${key}` : key
  }, base)

const SEGMENT = /\.?([A-Za-z0-9_-]+)|\[(\d+)\]|\[("(?:[^"\\]|\\.)*")\]/y

/** `exports[1].columns["a.b"]` → ["exports", 1, "columns", "a.b"]: the inverse of `joinPath`. */
export const pathSegments = (configPath: string): Array<string | number> => {
  const segments: Array<string | number> = []
  SEGMENT.lastIndex = 0
  for (let match = SEGMENT.exec(configPath); match !== null; match = SEGMENT.exec(configPath)) {
    segments.push(match[1] ?? (match[2] !== undefined ? Number(match[2]) : (JSON.parse(match[3]!) as string)))
  }
  return segments
}


/** The keys a user writes in YAML for a struct schema (its encoded side). */
export const knownKeys = (schema: Schema.Schema.AnyNoContext): ReadonlyArray<string> => {
  try {
    return SchemaAST.getPropertySignatures(SchemaAST.encodedAST(schema.ast)).map((p) => String(p.name))
  } catch {
    return []
  }
}

export const unknownKeyError = (path: string, key: string, known: ReadonlyArray<string>): ConfigError => {
  const suggestion = didYouMean(key, known)
  const migration = rustKeyHint(path, key, known)
  return new ConfigError({
    path: joinPath(path, [key]),
    message: `unknown key '${key}'`,
    hint: migration
      ? `'${key}' is a key of the Rust rivet; ${migration}`
      : suggestion
      ? `did you mean '${suggestion}'?`
      : known.length > 0
        ? `known keys here: ${known.join(", ")}`
        : "this block takes no keys"
  })
}

const messageOf = (issue: ParseResult.ArrayFormatterIssue): string => {
  switch (issue._tag) {
    case "Missing":
      // Effect's default text is "is missing"; a schema's `missingMessage` (e.g. S3's region hint) is kept.
      return issue.message === "is missing" ? "is required" : issue.message
    default:
      return issue.message.replace(/^Expected /, "expected ")
  }
}

const ALTERNATIVE = /^Expected (.+), actual (.+)$/s

/**
 * A value that fails a union fails each member: `mode: sometimes` gives one issue per allowed literal, and an
 * optional key adds "expected undefined". One issue per path reads better: `expected "full" or "chunked", actual …`.
 */
const mergeAlternatives = (
  issues: ReadonlyArray<ParseResult.ArrayFormatterIssue>
): ReadonlyArray<ParseResult.ArrayFormatterIssue> => {
  const byPath = new Map<string, Array<ParseResult.ArrayFormatterIssue>>()
  for (const issue of issues) {
    const key = joinPath("", issue.path)
    byPath.set(key, [...(byPath.get(key) ?? []), issue])
  }
  // An optional block that fails inside also fails its `undefined` alternative: noise once a nested issue names it.
  const paths = [...byPath.keys()]
  const nested = (key: string) => paths.some((other) => other !== key && (other.startsWith(`${key}.`) || other.startsWith(`${key}[`)))
  return [...byPath.entries()].flatMap(([key, all]) => {
    // Likewise a mapping that fails inside a struct alternative (`amount: { type: …, nullable: … }`) also fails the
    // union's non-struct alternatives (`expected string, actual {…}`), and a list that fails inside a list
    // alternative (`meta_columns: [exported_at, loaded_at]`) the mapping one: the nested issue is the one to report.
    const group =
      all.length > 1 || nested(key)
        ? all.filter(
            (issue) =>
              !issue.message.startsWith("Expected undefined, actual ") &&
              !(nested(key) && issue._tag === "Type" && /, actual [{[]/.test(issue.message))
          )
        : all
    const matches = group.map((issue) => (issue._tag === "Type" ? ALTERNATIVE.exec(issue.message) : null))
    if (group.length < 2 || matches.some((match) => match === null)) return group
    return [{ ...group[0]!, message: `Expected ${matches.map((match) => match![1]).join(" or ")}, actual ${matches[0]![2]}` }]
  })
}

/**
 * Decodes a config block with its schema, rejecting unknown keys. Every problem becomes one ConfigError
 * carrying the full config path, e.g. `exports[0].destination.pth: unknown key 'pth'` + "did you mean 'path'?".
 */
export const decodeBlock = <A, I>(
  schema: Schema.Schema<A, I>,
  input: unknown,
  path: string
): Either.Either<A, ReadonlyArray<ConfigError>> => {
  const result = Schema.decodeUnknownEither(schema, { errors: "all", onExcessProperty: "error" })(input)
  if (Either.isRight(result)) return Either.right(result.right)
  const issues = mergeAlternatives(ParseResult.ArrayFormatter.formatIssueSync(nameShapes(result.left.issue)))
  return Either.left(
    dropMissingTypos(issues).map((issue) => {
      if (issue._tag === "Unexpected" && issue.path.length > 0) {
        const parentPath = issue.path.slice(0, -1)
        const key = String(issue.path[issue.path.length - 1])
        return unknownKeyError(joinPath(path, parentPath), key, keysAt(schema, parentPath))
      }
      const at = joinPath(path, issue.path)
      return new ConfigError({
        path: at,
        message: messageOf(issue),
        hint: splitTypeHint(issue) ?? rustValueHint(at, valueAtPath(input, issue.path))
      })
    })
  )
}

/** The input value at a decoding issue's path (undefined where the path leaves the input). */
const valueAtPath = (input: unknown, segments: ReadonlyArray<PropertyKey>): unknown =>
  segments.reduce<unknown>(
    (value, segment) => (value !== null && typeof value === "object" ? (value as Record<PropertyKey, unknown>)[segment] : undefined),
    input
  )

/**
 * `columns: { amount: decimal(18,2) }` is YAML for `{ "amount": "decimal(18", "2)": null }`: a flow mapping splits
 * at the comma. The issue lands on the orphan key `2)`; say what happened instead of a bare "actual null".
 */
const splitTypeHint = (issue: ParseResult.ArrayFormatterIssue): string | undefined => {
  const key = issue.path[issue.path.length - 1]
  if (issue.path[issue.path.length - 2] !== "columns" || typeof key !== "string" || !/^\s*\d+\s*\)$/.test(key)) return undefined
  return `inside { } a comma separates entries, so a type such as decimal(18,2) was split at its comma: quote it, columns: { amount: "decimal(18,2)" }, or write the override in block style`
}

/**
 * `pth: out` is one mistake, not two: when an unknown key is a likely typo of a required key that is missing next
 * to it, only the unknown key (whose hint names the right spelling) is reported.
 */
const dropMissingTypos = <I extends ParseResult.ArrayFormatterIssue>(issues: ReadonlyArray<I>): ReadonlyArray<I> => {
  const missing = issues.filter((issue) => issue._tag === "Missing" && issue.path.length > 0)
  const typos = issues.filter((issue) => issue._tag === "Unexpected" && issue.path.length > 0)
  const covered = new Set(
    missing.filter((gap) =>
      typos.some((typo) => {
        const parent = joinPath("", typo.path.slice(0, -1))
        const key = String(gap.path[gap.path.length - 1])
        return parent === joinPath("", gap.path.slice(0, -1)) && didYouMean(String(typo.path[typo.path.length - 1]), [key]) === key
      })
    )
  )
  return issues.filter((issue) => !covered.has(issue))
}

/** Known keys of the struct found by walking `segments` into a schema (best effort, for hints). */
const keysAt = (schema: Schema.Schema.AnyNoContext, segments: ReadonlyArray<PropertyKey>): ReadonlyArray<string> => {
  let ast: SchemaAST.AST = SchemaAST.encodedAST(schema.ast)
  for (const segment of segments) {
    if (typeof segment === "number") {
      if (SchemaAST.isTupleType(ast) && ast.rest[0]) ast = ast.rest[0].type
      continue
    }
    const property = safeSignatures(ast).find((p) => p.name === segment)
    // A record (`columns: { amount: {...} }`): any key leads to the value schema.
    const record = recordValue(ast)
    if (!property && !record) return []
    ast = property?.type ?? record!
  }
  return safeSignatures(ast).map((p) => String(p.name))
}

const recordValue = (ast: SchemaAST.AST): SchemaAST.AST | undefined => {
  if (SchemaAST.isUnion(ast)) return ast.types.map(recordValue).find((value) => value !== undefined)
  return SchemaAST.isTypeLiteral(ast) ? ast.indexSignatures[0]?.type : undefined
}

const safeSignatures = (ast: SchemaAST.AST): ReadonlyArray<SchemaAST.PropertySignature> => {
  if (SchemaAST.isUnion(ast)) return ast.types.flatMap((member) => safeSignatures(member))
  try {
    return SchemaAST.getPropertySignatures(ast)
  } catch {
    return []
  }
}
