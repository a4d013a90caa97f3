import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 }

/** 100 000 days (~273 years): longer than any lag or timeout means, yet far inside a Date's range. */
export const MAX_DURATION_MS = 100_000 * UNIT_MS["d"]!

const DURATION = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)\s*$/i

/** Parses `500ms`, `30s`, `5m`, `2h`, `1d` (or a plain number of seconds) into milliseconds. */
export const parseDuration = (input: string | number): number | undefined => {
  const ms = ((): number | undefined => {
    if (typeof input === "number") return input >= 0 ? Math.round(input * 1000) : undefined
    const match = DURATION.exec(input)
    return match ? Math.round(Number(match[1]) * UNIT_MS[match[2]!.toLowerCase()]!) : undefined
  })()
  // Past this, adding it to a timestamp leaves the range of a Date.
  return ms !== undefined && ms <= MAX_DURATION_MS ? ms : undefined
}

/** Why `parseDuration` refused `input`: too long, or not a duration. */
export const durationProblem = (input: string | number): string => {
  const shown = typeof input === "number" ? String(input) : JSON.stringify(input)
  const spelled = typeof input === "number" ? input >= 0 : DURATION.test(input)
  return spelled
    ? `duration ${shown} is too long: at most 100000d`
    : `invalid duration ${shown}: use a number with a unit ms, s, m, h or d, e.g. 5m`
}

/** A duration such as `5m`, decoded to milliseconds. */
export const DurationMs = Schema.transformOrFail(Schema.Union(Schema.String, Schema.Number), Schema.Number, {
  strict: true,
  decode: (input, _options, ast) => {
    const ms = parseDuration(input)
    return ms === undefined
      ? ParseResult.fail(new ParseResult.Type(ast, input, durationProblem(input)))
      : ParseResult.succeed(ms)
  },
  encode: (ms) => ParseResult.succeed(ms / 1000)
}).annotations({
  identifier: "Duration",
  description: "A duration: a number with a unit ms, s, m, h or d (e.g. 5m), or a number of seconds.",
  // For `rivet schema`: what the YAML may hold (the same grammar as parseDuration).
  jsonSchema: {
    anyOf: [{ type: "string", pattern: "^\\s*\\d+(\\.\\d+)?\\s*([mM][sS]|[sSmMhHdD])\\s*$" }, { type: "number", minimum: 0 }]
  }
})
