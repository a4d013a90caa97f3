import type { ByteOut } from "./out.js"

/**
 * UTF-8 text and raw bytes written as the text formats need them: JSON strings escaped, JSON text embedded on one
 * line, CSV fields quoted as RFC 4180 requires, bytes and uuids as lowercase hex. Each scans the source bytes and
 * writes into `ByteOut` directly, without a JS string.
 */

const QUOTE = 0x22
const COMMA = 0x2c
const LF = 0x0a
const CR = 0x0d
const BACKSLASH = 0x5c
const SPACE = 0x20

const HEX = Uint8Array.from("0123456789abcdef", (char) => char.charCodeAt(0))

export const writeHex = (out: ByteOut, data: Uint8Array, start: number, end: number): void => {
  out.ensure(2 * (end - start))
  const buf = out.buf
  let pos = out.pos
  for (let i = start; i < end; i++) {
    const byte = data[i]!
    buf[pos++] = HEX[byte >>> 4]!
    buf[pos++] = HEX[byte & 15]!
  }
  out.pos = pos
}

export const writeUuid = (out: ByteOut, data: Uint8Array, offset: number): void => {
  out.ensure(36)
  const buf = out.buf
  let pos = out.pos
  for (let i = 0; i < 16; i++) {
    if (i === 4 || i === 6 || i === 8 || i === 10) buf[pos++] = 0x2d
    const byte = data[offset + i]!
    buf[pos++] = HEX[byte >>> 4]!
    buf[pos++] = HEX[byte & 15]!
  }
  out.pos = pos
}

/** Bytes that JSON.stringify escapes: control characters, `"` and `\`. Everything else (UTF-8 included) is kept. */
const JSON_ESCAPE = new Uint8Array(256)
for (let b = 0; b < 0x20; b++) JSON_ESCAPE[b] = 1
JSON_ESCAPE[QUOTE] = 1
JSON_ESCAPE[BACKSLASH] = 1
const SHORT_ESCAPE: Record<number, number> = { 0x08: 0x62, 0x09: 0x74, 0x0a: 0x6e, 0x0c: 0x66, 0x0d: 0x72 }

/** A JSON string of UTF-8 text, escaped exactly as `JSON.stringify` does (`\n`, `\u001f`, `\"`, `\\`). */
export const writeJsonString = (out: ByteOut, data: Uint8Array, start: number, end: number): void => {
  // One pass: copy until the first byte to escape (most text has none), then escape the rest.
  out.ensure(end - start + 2)
  let buf = out.buf
  let pos = out.pos
  buf[pos++] = QUOTE
  let i = start
  for (; i < end; i++) {
    const byte = data[i]!
    if (JSON_ESCAPE[byte] === 1) break
    buf[pos++] = byte
  }
  if (i < end) {
    out.pos = pos
    out.ensure(6 * (end - i) + 1)
    buf = out.buf
    for (; i < end; i++) {
      const byte = data[i]!
      if (JSON_ESCAPE[byte] !== 1) {
        buf[pos++] = byte
        continue
      }
      buf[pos++] = BACKSLASH
      if (byte === QUOTE || byte === BACKSLASH) buf[pos++] = byte
      else if (SHORT_ESCAPE[byte] !== undefined) buf[pos++] = SHORT_ESCAPE[byte]
      else {
        buf[pos++] = 0x75 // u00XX, lowercase hex as JSON.stringify writes it
        buf[pos++] = 0x30
        buf[pos++] = 0x30
        buf[pos++] = HEX[byte >>> 4]!
        buf[pos++] = HEX[byte & 15]!
      }
    }
  }
  buf[pos++] = QUOTE
  out.pos = pos
}

/** Each byte as itself, except CR and LF: spaces. */
const ONE_LINE = Uint8Array.from({ length: 256 }, (_, b) => (b === LF || b === CR ? SPACE : b))

/**
 * JSON text embedded as is, except line breaks — which valid JSON can only hold as insignificant whitespace and
 * which would split an NDJSON line — written as spaces.
 */
export const writeJsonText = (out: ByteOut, data: Uint8Array, start: number, end: number): void => {
  out.ensure(end - start)
  const buf = out.buf
  let pos = out.pos
  for (let i = start; i < end; i++) buf[pos++] = ONE_LINE[data[i]!]!
  out.pos = pos
}

const CSV_SPECIAL = new Uint8Array(256)
CSV_SPECIAL[QUOTE] = 1
CSV_SPECIAL[COMMA] = 1
CSV_SPECIAL[LF] = 1
CSV_SPECIAL[CR] = 1

/**
 * A CSV field of UTF-8 text (RFC 4180): quoted when empty (so that it differs from NULL, an empty unquoted field)
 * or when it holds `,` `"` CR or LF, with `"` doubled inside; otherwise as is.
 */
export const writeCsvText = (out: ByteOut, data: Uint8Array, start: number, end: number): void => {
  let special = start === end
  let quotes = 0
  for (let i = start; i < end; i++) {
    const byte = data[i]!
    if (CSV_SPECIAL[byte] === 1) {
      special = true
      if (byte === QUOTE) quotes++
    }
  }
  if (!special) return out.copy(data, start, end)
  out.ensure(end - start + quotes + 2)
  const buf = out.buf
  let pos = out.pos
  buf[pos++] = QUOTE
  if (quotes === 0) {
    out.pos = pos
    out.copy(data, start, end)
    pos = out.pos
  } else {
    for (let i = start; i < end; i++) {
      const byte = data[i]!
      buf[pos++] = byte
      if (byte === QUOTE) buf[pos++] = QUOTE
    }
  }
  buf[pos++] = QUOTE
  out.pos = pos
}

/** Quotes the CSV field written at `out.buf[start…pos)` in place when RFC 4180 requires it (see `writeCsvText`). */
export const quoteInPlace = (out: ByteOut, start: number): void => {
  let special = start === out.pos
  let quotes = 0
  for (let i = start; i < out.pos; i++) {
    const byte = out.buf[i]!
    if (CSV_SPECIAL[byte] === 1) {
      special = true
      if (byte === QUOTE) quotes++
    }
  }
  if (!special) return
  const end = out.pos
  out.ensure(quotes + 2)
  const buf = out.buf
  let write = end + quotes + 2
  out.pos = write
  buf[--write] = QUOTE
  for (let i = end - 1; i >= start; i--) {
    const byte = buf[i]!
    buf[--write] = byte
    if (byte === QUOTE) buf[--write] = QUOTE
  }
  buf[--write] = QUOTE
}

