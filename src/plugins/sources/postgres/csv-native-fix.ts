/**
 * Rewrites PostgreSQL's own text of some columns into Rivet's CSV spelling, row by row, on the client. Formatting a
 * timestamp with `to_char` or reshaping a float's exponent in SQL costs the server more than writing the row itself
 * (docs/benchmarks.md, "CSV, session of 2026-12-05 (afternoon)"), and on a shared machine the server sets the pace
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
 * Every other field is left as it is (quoted ones included). The row is fixed in place, in the buffer it was
 * copied into: most rows only grow at their timestamp, and moving the bytes after it (`copyWithin`) is cheaper than
 * writing the row anew in JavaScript.
 */

/** How a column's native text is rewritten (`none`: kept as it is). */
export type CsvFix = "none" | "timestamp" | "timestamptz" | "time" | "float"

export interface RowFixer {
  /** The most bytes a row can grow by. */
  readonly maxGrowth: number
  /**
   * Fixes the row `buffer[start, end)` (one CopyData message, ending in its line feed) in place, growing it by at most
   * `maxGrowth` bytes (the buffer must have that room after `end`); returns the row's new end. Throws on text it does
   * not recognise, rather than writing wrong bytes.
   */
  readonly fix: (buffer: Uint8Array, start: number, end: number) => number
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

const unexpected = (what: string, buffer: Uint8Array, start: number, end: number): Error =>
  new Error(`unexpected ${what} text in COPY … (FORMAT csv): ${JSON.stringify(Buffer.from(buffer.subarray(start, end)).toString("latin1"))}`)

/** The end of the field starting at `p` (its comma or the row's line feed at `end - 1`). */
const fieldEnd = (buffer: Uint8Array, p: number, end: number): number => {
  if (buffer[p] === QUOTE) {
    p++
    for (;;) {
      while (p < end && buffer[p] !== QUOTE) p++
      if (p >= end) return end
      if (buffer[p + 1] !== QUOTE) return p + 1
      p += 2
    }
  }
  // An unquoted field holds no line feed: only the row's last byte is one.
  const last = end - 1
  while (p < last && buffer[p] !== COMMA) p++
  return p
}

/** Moves the row's bytes `[from, end)` by `delta`; returns the row's new end. */
const shift = (buffer: Uint8Array, from: number, end: number, delta: number): number => {
  if (delta === 0) return end
  if (end - from === 1) buffer[from + delta] = buffer[from]!
  else buffer.copyWithin(from + delta, from, end)
  return end + delta
}

// The end of the field just fixed, a second result kept out of an allocated pair on this per-row path.
let fieldTo = 0

/**
 * Pads the fraction of a time of day whose seconds end at `q` (`.` and 0–6 digits, or nothing) to six digits and
 * appends `suffix` (0: none); `rest` bytes (a zone) follow the fraction and are dropped. Returns the row's new end.
 */
const padFraction = (buffer: Uint8Array, q: number, to: number, end: number, rest: number, suffix: number): number => {
  let digits = -1
  if (q < to && buffer[q] === DOT) {
    digits = 0
    while (q + 1 + digits < to && buffer[q + 1 + digits]! >= ZERO && buffer[q + 1 + digits]! <= NINE) digits++
  }
  const fractionEnd = q + 1 + digits
  if (to - fractionEnd !== rest) return -1
  const newTo = q + 7 + (suffix === 0 ? 0 : 1)
  end = shift(buffer, to, end, newTo - to)
  let at = fractionEnd
  if (digits < 0) buffer[at++] = DOT
  while (at < q + 7) buffer[at++] = ZERO
  if (suffix !== 0) buffer[at] = suffix
  fieldTo = newTo
  return end
}

const timestamp = (buffer: Uint8Array, p: number, to: number, end: number, zoned: boolean): number => {
  // NULL, or the server's own expanded form (years outside 1–9999): kept.
  if (to - p < 19 || buffer[p + 10] !== SPACE) {
    fieldTo = to
    return end
  }
  buffer[p + 10] = T
  if (zoned && (buffer[to - 3] !== PLUS || buffer[to - 2] !== ZERO || buffer[to - 1] !== ZERO)) throw unexpected("timestamptz", buffer, p, to)
  const fixed = padFraction(buffer, p + 19, to, end, zoned ? 3 : 0, zoned ? Z : 0)
  if (fixed < 0) throw unexpected(zoned ? "timestamptz" : "timestamp", buffer, p, to)
  return fixed
}

const time = (buffer: Uint8Array, p: number, to: number, end: number): number => {
  if (p === to) {
    fieldTo = to
    return end
  }
  const fixed = to - p < 8 ? -1 : padFraction(buffer, p + 8, to, end, 0, 0)
  if (fixed < 0) throw unexpected("time", buffer, p, to)
  return fixed
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

const float = (buffer: Uint8Array, p: number, to: number, end: number): number => {
  fieldTo = to
  let i = p
  while (i < to && buffer[i] !== E) i++
  if (i === to) return end
  const text = exponentFloat(Buffer.from(buffer.subarray(p, to)).toString("latin1"))
  end = shift(buffer, to, end, p + text.length - to)
  for (let k = 0; k < text.length; k++) buffer[p + k] = text.charCodeAt(k)
  fieldTo = p + text.length
  return end
}

/** The fixer for a row of these columns, or `undefined` when no column needs one. */
export const makeRowFixer = (fixes: ReadonlyArray<CsvFix>): RowFixer | undefined => {
  const last = fixes.findLastIndex((fix) => fix !== "none")
  if (last < 0) return undefined
  const codes = Uint8Array.from(fixes.slice(0, last + 1), (fix) => CODES[fix])
  const fix = (buffer: Uint8Array, start: number, end: number): number => {
    let p = start
    for (let c = 0; c < codes.length; c++) {
      if (c > 0) {
        if (buffer[p] !== COMMA) throw unexpected("row", buffer, start, end)
        p++
      }
      const code = codes[c]!
      const to = fieldEnd(buffer, p, end)
      if (code === NONE) {
        p = to
        continue
      }
      if (buffer[p] === QUOTE) throw unexpected("quoted", buffer, p, to)
      if (code === TIMESTAMP || code === TIMESTAMPTZ) end = timestamp(buffer, p, to, end, code === TIMESTAMPTZ)
      else if (code === TIME) end = time(buffer, p, to, end)
      else end = float(buffer, p, to, end)
      p = fieldTo
    }
    return end
  }
  return { maxGrowth: GROWTH * fixes.filter((fix) => fix !== "none").length, fix }
}
