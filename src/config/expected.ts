import * as ReadonlyArray from "effect/Array"
import * as Option from "effect/Option"
import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"
import * as SchemaAST from "effect/SchemaAST"

/**
 * Effect names the expected type of a failed value by the schema's identifier, title or *description*; Rivet's
 * descriptions are sentences for `rivet schema` and docs, so `exports: {a: 1}` read
 * "expected The exports to run, in order., actual {...}". This names the shape instead ("a list").
 */

/** A Rivet description (a sentence) rather than a type name such as `string` or `a non-negative number`. */
const isSentence = (text: string): boolean => text.trimEnd().endsWith(".")

/** The failed value as effect's own messages show it: JSON, or its plain text when JSON has no spelling for it. */
const shown = (value: unknown): string => {
  if (typeof value === "number" && !Number.isFinite(value)) return String(value)
  try {
    return JSON.stringify(value) ?? String(value)
  } catch {
    return String(value)
  }
}

const literalText = (literal: SchemaAST.LiteralValue): string =>
  typeof literal === "bigint" ? `${literal}` : JSON.stringify(literal)

/** The shape of an AST in YAML words; undefined when there is no honest short name for it. */
export const shapeOf = (ast: SchemaAST.AST): string | undefined => {
  const named = Option.getOrUndefined(SchemaAST.getIdentifierAnnotation(ast)) ?? Option.getOrUndefined(SchemaAST.getTitleAnnotation(ast))
  if (named !== undefined) return named
  switch (ast._tag) {
    case "StringKeyword":
      return "a string"
    case "NumberKeyword":
      return "a number"
    case "BooleanKeyword":
      return "true or false"
    case "Literal":
      return literalText(ast.literal)
    case "TupleType":
      return "a list"
    case "TypeLiteral":
      return "a mapping"
    case "Union": {
      const members = ast.types.filter((member) => member._tag !== "UndefinedKeyword").map(shapeOf)
      return members.every((member) => member !== undefined) ? members.join(" or ") : undefined
    }
    case "Transformation":
      return shapeOf(ast.from)
    case "Suspend":
      return shapeOf(ast.f())
    default:
      return undefined
  }
}

const expectedText = (ast: SchemaAST.AST): string | undefined => {
  const description = Option.getOrUndefined(SchemaAST.getDescriptionAnnotation(ast))
  const named = Option.isSome(SchemaAST.getIdentifierAnnotation(ast)) || Option.isSome(SchemaAST.getTitleAnnotation(ast))
  // Without annotations effect spells a struct or list in TypeScript: `{ readonly type: string }`.
  if (description === undefined && !named && (SchemaAST.isTypeLiteral(ast) || SchemaAST.isTupleType(ast))) return shapeOf(ast)
  if (description === undefined || !isSentence(description)) return undefined
  // Effect names a refinement by its description first: its title (`between(1, 65535)`) is what is left of its
  // bounds once a sentence replaced that description.
  if (SchemaAST.isRefinement(ast)) {
    const title = Option.getOrUndefined(SchemaAST.getTitleAnnotation(ast))
    return title ?? `a valid ${shapeOf(ast.from) ?? "value"}`
  }
  return named ? undefined : shapeOf(ast)
}

const isMany = (
  issues: ParseResult.SingleOrNonEmpty<ParseResult.ParseIssue>
): issues is ReadonlyArray.NonEmptyReadonlyArray<ParseResult.ParseIssue> => Array.isArray(issues)

const isUnsafeWhole = (issue: ParseResult.Type): boolean =>
  typeof issue.actual === "number" &&
  Number.isInteger(issue.actual) &&
  !Number.isSafeInteger(issue.actual) &&
  SchemaAST.getSchemaIdAnnotation(issue.ast).pipe(Option.exists((id) => id === Schema.IntSchemaId))

/** Rewrites the failures whose default message would quote a description sentence. */
export const nameShapes = (issue: ParseResult.ParseIssue): ParseResult.ParseIssue => {
  switch (issue._tag) {
    case "Type": {
      if (issue.message !== undefined || SchemaAST.getMessageAnnotation(issue.ast)._tag === "Some") return issue
      // 99999999999999999999 is whole, but past 2^53 a float no longer counts exactly: "expected an integer" confuses.
      if (isUnsafeWhole(issue)) {
        return new ParseResult.Type(issue.ast, issue.actual, `is too large: at most ${Number.MAX_SAFE_INTEGER}`)
      }
      const expected = expectedText(issue.ast)
      if (expected === undefined) return issue
      const actual = shown(issue.actual)
      return new ParseResult.Type(issue.ast, issue.actual, `Expected ${expected}, actual ${actual}`)
    }
    case "Pointer":
      return new ParseResult.Pointer(issue.path, issue.actual, nameShapes(issue.issue))
    case "Refinement":
      return new ParseResult.Refinement(issue.ast, issue.actual, issue.kind, nameShapes(issue.issue))
    case "Transformation":
      return new ParseResult.Transformation(issue.ast, issue.actual, issue.kind, nameShapes(issue.issue))
    case "Composite":
      return new ParseResult.Composite(
        issue.ast,
        issue.actual,
        isMany(issue.issues) ? ReadonlyArray.map(issue.issues, nameShapes) : nameShapes(issue.issues),
        issue.output
      )
    default:
      return issue
  }
}
