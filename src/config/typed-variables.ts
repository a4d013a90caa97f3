import type { ConfigError } from "../core/errors.js"
import { pathSegments } from "./issues.js"

/** A value that is one variable reference and nothing else: `batch_size: ${BATCH_SIZE}`. */
const WHOLE_VARIABLE = /^\$\{[A-Za-z_][A-Za-z0-9_]*\}$/
const WANTS = /^expected (number|boolean), actual "(.*)"$/s
const NUMBER = /^-?(?:0|[1-9]\d*)(?:\.\d+)?(?:[eE][+-]?\d+)?$/

const valueAt = (root: unknown, segments: ReadonlyArray<string | number>): unknown =>
  segments.reduce<unknown>(
    (node, segment) => (node !== null && typeof node === "object" ? (node as Record<string | number, unknown>)[segment] : undefined),
    root
  )

const setAt = (root: unknown, segments: ReadonlyArray<string | number>, value: unknown): unknown => {
  if (segments.length === 0) return value
  const [head, ...rest] = segments
  if (Array.isArray(root)) return root.map((item, index) => (index === head ? setAt(item, rest, value) : item))
  const record = root as Record<string, unknown>
  return { ...record, [head!]: setAt(record[head!], rest, value) }
}

const typed = (wants: string, text: string): number | boolean | undefined => {
  if (wants === "number") return NUMBER.test(text.trim()) ? Number(text.trim()) : undefined
  return text === "true" ? true : text === "false" ? false : undefined
}

/**
 * `${VAR}` is substituted as text after the YAML is parsed, so `batch_size: ${BATCH_SIZE}` arrives as the string
 * "5000" where a number is wanted (the Rust rivet substitutes before parsing and gets a number). For each "expected
 * number / boolean" problem at a value that was exactly one `${VAR}` whose text is a number / `true` / `false`, this
 * returns the resolved config with that value typed — or undefined when there is nothing to retype. Structure is
 * never affected: only a scalar whose decoder asked for a number or boolean changes.
 */
export const retypeVariables = (
  original: unknown,
  resolved: unknown,
  problems: ReadonlyArray<ConfigError>
): unknown | undefined => {
  let next = resolved
  let changed = false
  for (const problem of problems) {
    const match = WANTS.exec(problem.message)
    if (!match) continue
    const segments = pathSegments(problem.path)
    const written = valueAt(original, segments)
    const text = valueAt(resolved, segments)
    if (typeof written !== "string" || !WHOLE_VARIABLE.test(written) || typeof text !== "string") continue
    const value = typed(match[1]!, text)
    if (value === undefined) continue
    next = setAt(next, segments, value)
    changed = true
  }
  return changed ? next : undefined
}
