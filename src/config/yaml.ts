import * as Effect from "effect/Effect"
import * as YAML from "yaml"
import { ConfigError } from "../core/errors.js"
import { joinPath } from "./issues.js"

/** A parsed YAML document plus what is needed to point errors at lines. */
export interface ParsedYaml {
  readonly value: unknown
  /** 1-based line of the node at a config path, when the path exists in the file. */
  readonly lineOf: (path: ReadonlyArray<string | number>) => number | undefined
}

/** The library's words for a few errors, rephrased for someone editing a config rather than calling a YAML API. */
const reasonOf = (error: YAML.YAMLError, firstLine: string): string => {
  if (error.code === "MULTIPLE_DOCS") return "a second YAML document starts here (a --- line); a config is one document"
  if (firstLine.includes("Maximum call stack size exceeded")) return "the document is nested too deeply"
  return firstLine
}

const yamlErrorMessage = (error: YAML.YAMLError): string => {
  const position = error.linePos?.[0]
  // prettyErrors appends " at line L, column C:" and a code excerpt; the position is already in front.
  const firstLine = (error.message.split("\n")[0] ?? error.message).replace(/ at line \d+, column \d+:?$/, "")
  const reason = reasonOf(error, firstLine)
  return position ? `line ${position.line}, column ${position.col}: ${reason}` : reason
}

/** An unquoted `{` starts a flow mapping: the usual cause of a syntax error on a line holding one, or of an unclosed one. */
const braceHint = (error: YAML.YAMLError, text: string): string | undefined => {
  const line = error.linePos ? text.split(/\r?\n/)[error.linePos[0].line - 1] : undefined
  return /flow map/i.test(error.message) || (line !== undefined && line.includes("{"))
    ? "values containing { } must be quoted"
    : undefined
}

const MAX_ALIAS_COUNT = 100

/** Parses YAML text; syntax errors become a ConfigError pointing at the line. */
export const parseYaml = (text: string, origin: string): Effect.Effect<ParsedYaml, ConfigError> =>
  Effect.suspend(() => {
    const lineCounter = new YAML.LineCounter()
    const document = YAML.parseDocument(text, { lineCounter, prettyErrors: true, uniqueKeys: true })
    const first = document.errors[0]
    if (first) {
      return Effect.fail(
        new ConfigError({
          path: origin,
          message: `invalid YAML: ${yamlErrorMessage(first)}`,
          hint: braceHint(first, text)
        })
      )
    }
    const lineOf = (path: ReadonlyArray<string | number>): number | undefined => {
      const node = document.getIn(path, true)
      const offset = YAML.isNode(node) ? node.range?.[0] : undefined
      return offset === undefined ? undefined : lineCounter.linePos(offset).line
    }
    return Effect.try({
      try: () => ({ value: document.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as unknown, lineOf }),
      // Alias expansion past the limit (a "billion laughs" document) or a structure too deep to convert.
      catch: (cause) =>
        cause instanceof ReferenceError
          ? new ConfigError({
              path: origin,
              message: "invalid YAML: its aliases (*name) expand into too many values",
              hint: "write the values out instead of nesting aliases of aliases"
            })
          : new ConfigError({ path: origin, message: "invalid YAML: the document is nested too deeply to read" })
    })
  })

const VARIABLE = /\$\$|\$\{([^}]*)\}/g

/**
 * Replaces `${NAME}` in every string value with the environment variable NAME; `$$` is a literal `$`.
 * Substitution happens after parsing, on values only, so a variable can never inject YAML structure.
 * An unset variable is an error naming it — an empty value would silently change the meaning.
 */
export const interpolate = (
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
  path: string = ""
): Effect.Effect<unknown, ConfigError> => {
  if (typeof value === "string") {
    let missing: string | undefined
    let invalid: string | undefined
    const replaced = value.replace(VARIABLE, (match, name: string | undefined) => {
      if (match === "$$") return "$"
      if (name === undefined || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) {
        invalid ??= match
        return match
      }
      const found = env[name]
      if (found === undefined) missing ??= name
      return found ?? ""
    })
    if (invalid !== undefined) {
      return Effect.fail(
        new ConfigError({
          path: path || "(root)",
          message: `'${invalid}' is not a valid variable reference`,
          hint: "use ${NAME} with letters, digits and underscores, or $$ for a literal $"
        })
      )
    }
    if (missing !== undefined) {
      return Effect.fail(
        new ConfigError({
          path: path || "(root)",
          message: `environment variable '${missing}' is not set (referenced as \${${missing}})`,
          hint: `export ${missing}=... before running (or pass --param ${missing}=... to rivet), or remove the reference`
        })
      )
    }
    return Effect.succeed(replaced)
  }
  if (Array.isArray(value)) {
    return Effect.forEach(value, (item, index) => interpolate(item, env, `${path}[${index}]`))
  }
  if (value !== null && typeof value === "object") {
    return Effect.map(
      Effect.forEach(Object.entries(value), ([key, item]) =>
        Effect.map(interpolate(item, env, joinPath(path, [key])), (resolved) => [key, resolved] as const)
      ),
      Object.fromEntries
    )
  }
  return Effect.succeed(value)
}
