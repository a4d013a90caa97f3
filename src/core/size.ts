import * as ParseResult from "effect/ParseResult"
import * as Schema from "effect/Schema"

const UNITS: Record<string, number> = {
  b: 1,
  kb: 1024,
  kib: 1024,
  mb: 1024 ** 2,
  mib: 1024 ** 2,
  gb: 1024 ** 3,
  gib: 1024 ** 3,
  tb: 1024 ** 4,
  tib: 1024 ** 4
}

/**
 * Parses a byte size: a whole number of bytes, or a number with a unit (`256MiB`, `1GB`, `1.5 gb`).
 * Units are binary (KB = KiB = 1024 bytes), as in rivet-rs. Returns undefined when the text is not a size.
 */
export const parseByteSize = (input: string | number): number | undefined => {
  if (typeof input === "number") return Number.isSafeInteger(input) && input >= 1 ? input : undefined
  const match = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(input)
  if (!match) return undefined
  const unit = UNITS[(match[2] || "b").toLowerCase()]
  if (unit === undefined) return undefined
  const bytes = Math.floor(Number(match[1]) * unit)
  return Number.isSafeInteger(bytes) && bytes >= 1 ? bytes : undefined
}

/** Why `parseByteSize` refused `input`: too large, not above zero, or not a size at all. */
export const byteSizeProblem = (input: string | number): string => {
  const shown = typeof input === "number" ? String(input) : JSON.stringify(input)
  const match = typeof input === "number" ? undefined : /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(input)
  const unit = match ? UNITS[(match[2] || "b").toLowerCase()] : undefined
  const value = typeof input === "number" ? input : match && unit !== undefined ? Number(match[1]) * unit : Number.NaN
  if (value > Number.MAX_SAFE_INTEGER) return `size ${shown} is too large: at most ${formatBytes(Number.MAX_SAFE_INTEGER)}`
  if (value < 1 || (typeof input === "number" && !Number.isInteger(input))) {
    return `invalid size ${shown}: must be a whole number of bytes, at least 1 (or a number with a unit, e.g. 256MiB)`
  }
  return `invalid size ${shown}: use a number of bytes or a number with a unit, e.g. 256MiB or 1GB`
}

/** `256MiB`, `1GB` or a plain number of bytes, decoded to a number of bytes (at least 1). */
export const ByteSize = Schema.transformOrFail(Schema.Union(Schema.String, Schema.Number), Schema.Number, {
  strict: true,
  decode: (input, _options, ast) => {
    const bytes = parseByteSize(input)
    return bytes === undefined
      ? ParseResult.fail(new ParseResult.Type(ast, input, byteSizeProblem(input)))
      : ParseResult.succeed(bytes)
  },
  encode: (bytes) => ParseResult.succeed(bytes)
}).annotations({
  identifier: "ByteSize",
  description: "A size: bytes, or a number with a unit B, KB/KiB, MB/MiB, GB/GiB (binary: 1KB = 1024 bytes).",
  // For `rivet schema`: what the YAML may hold (the same grammar as parseByteSize).
  jsonSchema: {
    anyOf: [
      { type: "string", pattern: "^\\s*\\d+(\\.\\d+)?\\s*([bB]|[kKmMgGtT][iI]?[bB])?\\s*$" },
      { type: "integer", minimum: 1 }
    ]
  }
})

/** Human size, 1024-based: `847.0 KiB`, `32.4 MiB`. */
export const formatBytes = (bytes: number): string => {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"]
  let value = bytes
  let unit = 0
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024
    unit++
  }
  return unit === 0 ? `${bytes} B` : `${value.toFixed(1)} ${units[unit]}`
}
