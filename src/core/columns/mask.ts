import { hash } from "node:crypto"
import { keyText } from "../key-text.js"
import { BinaryBuilder } from "./builders.js"
import { type ColumnData, isValid } from "./data.js"
import type { LogicalType } from "./logical.js"
import { valueAppender, valueAt } from "./values.js"

/**
 * Masking of one column's buffers, before any encoder sees them: keyed (HMAC-SHA256) or unkeyed (SHA-256) digests as
 * lowercase hex text, NULLs (redact), or all but the last four characters starred (last4). A digest covers a text or
 * bytes value's own bytes — no JS string per value — and any other value's text as `keyText` writes it
 * (`2026-01-01T00:00:00.000000Z`, `42`). NULL stays NULL.
 */

export type MaskMethod = "hmac_sha256" | "hash_sha256" | "redact" | "last4" | "drop"

export const MASK_METHODS: ReadonlyArray<MaskMethod> = ["hmac_sha256", "hash_sha256", "redact", "last4", "drop"]

const HEX = Uint8Array.from("0123456789abcdef", (char) => char.charCodeAt(0))
const encoder = new TextEncoder()

/** Text kinds whose column bytes are the value's UTF-8 (or its raw bytes): digested as they are. */
const ownBytes = (type: LogicalType): boolean => type.kind === "string" || type.kind === "json" || type.kind === "bytes"

/** The type a masked column is written with. */
export const maskedType = (method: Exclude<MaskMethod, "drop">, type: LogicalType): LogicalType =>
  method === "hmac_sha256" || method === "hash_sha256" ? { kind: "string" } : type

/** Why `method` cannot mask a column of `type`, if it cannot. */
export const maskProblem = (method: MaskMethod, type: LogicalType): string | undefined =>
  method === "last4" && type.kind !== "string" ? `last4 keeps the last four characters of text, and this column is ${type.kind}` : undefined

const digestColumn = (column: ColumnData, type: LogicalType, digest: (bytes: Uint8Array) => Buffer): ColumnData => {
  const out = new BinaryBuilder(column.length, 64)
  const binary = column.layout === "binary" && ownBytes(type) ? column : undefined
  for (let row = 0; row < column.length; row++) {
    if (!isValid(column, row)) {
      out.appendNull()
      continue
    }
    const bytes = binary
      ? binary.data.subarray(binary.offsets[row]!, binary.offsets[row + 1]!)
      : encoder.encode(keyText(type, valueAt(column, type, row)) ?? "")
    const sum = digest(bytes)
    out.reserve(64)
    const at = out.end
    for (let i = 0; i < 32; i++) {
      out.data[at + 2 * i] = HEX[sum[i]! >>> 4]!
      out.data[at + 2 * i + 1] = HEX[sum[i]! & 15]!
    }
    out.commit(64)
  }
  return out.finish()
}

/** `*` for every character but the last four (all of them when there are four or fewer), by UTF-8 code points. */
const lastFour = (column: ColumnData): ColumnData => {
  if (column.layout !== "binary") throw new Error("last4 needs a text column")
  const out = new BinaryBuilder(column.length, 16)
  const { data, offsets } = column
  for (let row = 0; row < column.length; row++) {
    if (!isValid(column, row)) {
      out.appendNull()
      continue
    }
    const start = offsets[row]!
    const end = offsets[row + 1]!
    // Where the last four code points begin, scanning back over continuation bytes (10xxxxxx).
    let keepFrom = end
    let kept = 0
    while (keepFrom > start && kept < 4) {
      keepFrom--
      if ((data[keepFrom]! & 0xc0) !== 0x80) kept++
    }
    let stars = 0
    for (let i = start; i < keepFrom; i++) if ((data[i]! & 0xc0) !== 0x80) stars++
    if (kept <= 4 && stars === 0) {
      // Four characters or fewer: nothing is kept.
      stars = kept
      keepFrom = end
    }
    out.reserve(stars + (end - keepFrom))
    const at = out.end
    out.data.fill(42, at, at + stars)
    out.data.set(data.subarray(keepFrom, end), at + stars)
    out.commit(stars + (end - keepFrom))
  }
  return out.finish()
}

const nulls = (column: ColumnData, type: LogicalType): ColumnData => {
  const appender = valueAppender(type, Math.max(1, column.length))
  for (let row = 0; row < column.length; row++) appender.append(null)
  return appender.finish()
}

/**
 * HMAC-SHA256 (RFC 2104) from two one-shot SHA-256 digests over precomputed padded keys: per value about half the
 * CPU of a `createHmac` object (3.8 against 6.6 µs here, bench/LOG.md).
 */
const hmacSha256 = (key: Uint8Array): ((bytes: Uint8Array) => Buffer) => {
  const block = key.byteLength > 64 ? hash("sha256", key, "buffer") : key
  const outer = Buffer.alloc(64 + 32, 0x5c)
  let inner = Buffer.alloc(64 + 256, 0x36)
  for (let i = 0; i < block.byteLength; i++) {
    inner[i]! ^= block[i]!
    outer[i]! ^= block[i]!
  }
  return (bytes) => {
    if (64 + bytes.byteLength > inner.byteLength) {
      const grown = Buffer.alloc(2 * (64 + bytes.byteLength))
      inner.copy(grown, 0, 0, 64)
      inner = grown
    }
    inner.set(bytes, 64)
    outer.set(hash("sha256", inner.subarray(0, 64 + bytes.byteLength), "buffer"), 64)
    return hash("sha256", outer, "buffer")
  }
}

/** A column masked with `method` (not `drop`, which removes it); `key` is the HMAC key. */
export const maskColumn = (
  column: ColumnData,
  type: LogicalType,
  method: Exclude<MaskMethod, "drop">,
  key: Uint8Array
): ColumnData => {
  switch (method) {
    case "hmac_sha256":
      return digestColumn(column, type, hmacSha256(key))
    case "hash_sha256":
      return digestColumn(column, type, (bytes) => hash("sha256", bytes, "buffer"))
    case "redact":
      return nulls(column, type)
    case "last4":
      return lastFour(column)
  }
}
