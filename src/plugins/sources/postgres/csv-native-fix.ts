/**
 * Rewrites PostgreSQL's own text of some columns into Rivet's CSV spelling, row by row, on the client. Formatting a
 * timestamp with `to_char` or reshaping a float's exponent in SQL costs the server more than writing the row itself
 * (bench/LOG.md, "CSV, session of 2026-12-05 (afternoon)"), and on a shared machine the server sets the pace
 * of a CSV export; this fixer moves that work to the reading thread.
 *
 * Input: one CopyData message of `COPY … TO STDOUT (FORMAT csv)` — one whole row ending in a line feed — with the
 * session's settings (DateStyle ISO, TimeZone UTC, extra_float_digits 3; session.ts). Each fixed column's field is
 * unquoted (its text never holds a comma, quote or line break) and empty for NULL:
 * - `timestamp`: `YYYY-MM-DD HH:MM:SS[.f…]` → `YYYY-MM-DDTHH:MM:SS.ffffff`; `timestamptz`: the same with `+00` → `Z`.
 *   A field whose 11th byte is not a space was already written by the server's expression (years outside 1–9999,
 *   csv-sql.ts) and is copied as it is.
 * - `time`: `HH:MM:SS[.f…]` → `HH:MM:SS.ffffff`.
 * - `float`: PostgreSQL's shortest round-trip text; one in exponent notation gets JavaScript's spelling (fixed
 *   notation for exponents −7 < e < 21, no leading zero in the exponent). Text without an `e` is already right.
 * Every other field is copied as it is (quoted ones included). The row is copied and fixed in one pass, byte by
 * byte up to its last fixed column: a view per row (`subarray`) for `set` would make a young-generation object per
 * row, and the reading thread's small young generation (src/cli/young-generation.ts) turns those into scavenges.
 */

/** How a column's native text is rewritten (`none`: kept as it is). */
export type CsvFix = "none" | "timestamp" | "timestamptz" | "time" | "float"

/**
 * Copies one CopyData message of rendered CSV, `source[start, end)` (a whole row ending in its line feed), into
 * `target` from `at`, which has room for `end - start + maxGrowth` bytes; returns the offset after the row.
 */
export type RowWriter = (source: Uint8Array, start: number, end: number, target: Uint8Array, at: number) => number

export interface RowFixer {
  /** The most bytes a row can grow by. */
  readonly maxGrowth: number
  /** Writes the row with its columns fixed. Throws on text it does not recognise, rather than writing wrong bytes. */
  readonly write: RowWriter
}

const COMMA = 0x2c
const QUOTE = 0x22
const SPACE = 0x20
const DOT = 0x2e
const ZERO = 0x30
const NINE = 0x39
const PLUS = 0x2b
const E = 0x65
const T = 0x54
const Z = 0x5a

const NONE = 0
const TIMESTAMP = 1
const TIMESTAMPTZ = 2
const TIME = 3
const FLOAT = 4
const CODES: Record<CsvFix, number> = { none: NONE, timestamp: TIMESTAMP, timestamptz: TIMESTAMPTZ, time: TIME, float: FLOAT }

/** Bytes a fixed field can grow by: a float's `1e+20` becomes 21 digits (+16), a time gains `.000000` (+7). */
const GROWTH = 16

/** Below this many bytes a loop copies faster than `set` with the view it needs (and leaves no garbage). */
const LOOP_BYTES = 64

/** Copies `source[from, to)` into `target` at `at`; returns the offset after it. */
export const copyBytes: RowWriter = (source, from, to, target, at) => {
  if (to - from >= LOOP_BYTES) {
    target.set(source.subarray(from, to), at)
    return at + (to - from)
  }
  while (from < to) target[at++] = source[from++]!
  return at
}

const unexpected = (what: string, source: Uint8Array, start: number, end: number): Error =>
  new Error(`unexpected ${what} text in COPY … (FORMAT csv): ${JSON.stringify(Buffer.from(source.subarray(start, end)).toString("latin1"))}`)

/**
 * Writes `.` and the fraction of a time of day at `source[p, to)` (`.` and 0–6 digits, or nothing) padded to six
 * digits, returns the offset after it in `target`; where the fraction ended in `source` is left in `fractionEnd`
 * (a second result kept out of an allocated pair on this per-row path).
 */
const fraction = (source: Uint8Array, p: number, to: number, target: Uint8Array, at: number): number => {
  target[at++] = DOT
  let digits = 0
  if (p < to && source[p] === DOT) {
    p++
    while (p < to && source[p]! >= ZERO && source[p]! <= NINE) {
      target[at++] = source[p++]!
      digits++
    }
  }
  for (; digits < 6; digits++) target[at++] = ZERO
  fractionEnd = p
  return at
}
let fractionEnd = 0

const timestamp = (source: Uint8Array, p: number, to: number, target: Uint8Array, at: number, zoned: boolean): number => {
  // NULL, or the server's own expanded form (years outside 1–9999): kept.
  if (to - p < 19 || source[p + 10] !== SPACE) return copyBytes(source, p, to, target, at)
  for (let i = 0; i < 10; i++) target[at++] = source[p + i]!
  target[at++] = T
  for (let i = 11; i < 19; i++) target[at++] = source[p + i]!
  at = fraction(source, p + 19, to, target, at)
  if (!zoned) {
    if (fractionEnd !== to) throw unexpected("timestamp", source, p, to)
    return at
  }
  if (to - fractionEnd !== 3 || source[to - 3] !== PLUS || source[to - 2] !== ZERO || source[to - 1] !== ZERO) {
    throw unexpected("timestamptz", source, p, to)
  }
  target[at++] = Z
  return at
}

const time = (source: Uint8Array, p: number, to: number, target: Uint8Array, at: number): number => {
  if (p === to) return at
  if (to - p < 8) throw unexpected("time", source, p, to)
  for (let i = 0; i < 8; i++) target[at++] = source[p + i]!
  at = fraction(source, p + 8, to, target, at)
  if (fractionEnd !== to) throw unexpected("time", source, p, to)
  return at
}

/** The exponent-notation case of `float`, mirroring PostgreSQL's `1e-05`/`1.5e+20` into JavaScript's spelling. */
const exponentFloat = (text: string): string => {
  const mark = text.indexOf("e")
  const sign = text.startsWith("-") ? "-" : ""
  const digits = text.slice(sign.length, mark).replace(".", "")
  const e = Number(text.slice(mark + 1))
  if (e < -6 || e > 20) return text.slice(0, mark + 2) + text.slice(mark + 2).replace(/^0+(?=\d)/, "")
  if (e < 0) return `${sign}0.${"0".repeat(-e - 1)}${digits}`
  if (digits.length <= e + 1) return sign + digits + "0".repeat(e + 1 - digits.length)
  return `${sign}${digits.slice(0, e + 1)}.${digits.slice(e + 1)}`
}

const float = (source: Uint8Array, p: number, to: number, target: Uint8Array, at: number): number => {
  const from = at
  for (let i = p; i < to; i++) {
    const byte = source[i]!
    if (byte === E) {
      const text = exponentFloat(Buffer.from(source.subarray(p, to)).toString("latin1"))
      for (let k = 0; k < text.length; k++) target[from + k] = text.charCodeAt(k)
      return from + text.length
    }
    target[at++] = byte
  }
  return at
}

/** The fixer for a row of these columns, or `undefined` when no column needs one. */
export const makeRowFixer = (fixes: ReadonlyArray<CsvFix>): RowFixer | undefined => {
  const lastFixed = fixes.findLastIndex((fix) => fix !== "none")
  if (lastFixed < 0) return undefined
  const codes = Uint8Array.from(fixes.slice(0, lastFixed + 1), (fix) => CODES[fix])
  const write: RowWriter = (source, start, end, target, at) => {
    // An unquoted field holds no line feed: the row's last byte is its only one.
    const last = end - 1
    let p = start
    for (let c = 0; c < codes.length; c++) {
      if (c > 0) {
        if (source[p] !== COMMA) throw unexpected("row", source, start, end)
        target[at++] = COMMA
        p++
      }
      const code = codes[c]!
      if (code === NONE) {
        if (source[p] !== QUOTE) {
          while (p < last && source[p] !== COMMA) target[at++] = source[p++]!
          continue
        }
        // A quoted field: up to the quote not followed by another.
        target[at++] = QUOTE
        p++
        for (;;) {
          while (p < last && source[p] !== QUOTE) target[at++] = source[p++]!
          if (p >= last) throw unexpected("row", source, start, end)
          target[at++] = QUOTE
          p++
          if (source[p] !== QUOTE) break
          target[at++] = QUOTE
          p++
        }
        continue
      }
      let to = p
      while (to < last && source[to] !== COMMA) to++
      if (source[p] === QUOTE) throw unexpected("quoted", source, p, to)
      if (code === TIMESTAMP || code === TIMESTAMPTZ) at = timestamp(source, p, to, target, at, code === TIMESTAMPTZ)
      else if (code === TIME) at = time(source, p, to, target, at)
      else at = float(source, p, to, target, at)
      p = to
    }
    return copyBytes(source, p, end, target, at)
  }
  return { maxGrowth: GROWTH * codes.filter((code) => code !== NONE).length, write }
}
