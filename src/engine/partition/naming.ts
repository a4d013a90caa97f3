import { createHash } from "node:crypto"
import { decodePartitionName, escapePartitionValue } from "./escape.js"

/** A file name's limit in bytes on Linux and macOS file systems (Windows counts UTF-16 units, never more). */
export const MAX_SEGMENT_BYTES = 255
/** What a part's partition directories may take together, so prefix and file name fit in S3's 1024-byte keys. */
export const DIRECTORIES_BUDGET = 768
/** The least a value's name is given, whatever the keys: a readable prefix beside the marker and the hash. */
const MIN_NAME_BYTES = 40
/**
 * Between a bounded name's prefix and its hash: `%7E` (`~` decoded), which escaping never writes since `~` is
 * not escaped — so a bounded name is never the name of another value, however that value reads.
 */
export const BOUNDED_MARKER = "%7E"
/** 80 bits of SHA-256: two long values of one export share a name with a probability below 2^-40 per billion pairs. */
const HASH_HEX_DIGITS = 20

const utf8 = new TextEncoder()
const byteLength = (text: string): number => utf8.encode(text).length

/** The hash a bounded name ends with: SHA-256 of the value's UTF-8 bytes, first 20 lowercase hex digits. */
export const valueHash = (value: string): string => createHash("sha256").update(value, "utf8").digest("hex").slice(0, HASH_HEX_DIGITS)

/**
 * The bytes a value's name may take in the directory `{key}={name}`: the directory within 255 bytes and all
 * `keyCount` directories (with their slashes) within 768, but never less than 40.
 */
export const nameBudget = (key: string, keyCount: number): number =>
  Math.max(MIN_NAME_BYTES, Math.min(MAX_SEGMENT_BYTES, Math.floor(DIRECTORIES_BUDGET / keyCount) - 1) - byteLength(key) - 1)

const continuationBytes = (lead: number): number => (lead >= 0xf0 ? 3 : lead >= 0xe0 ? 2 : lead >= 0xc0 ? 1 : 0)

/** The longest start of an escaped name within `bytes`, cut between characters (never inside `%XX` or a character). */
const cutEscaped = (name: string, bytes: number): string => {
  let used = 0
  let at = 0
  while (at < name.length) {
    let length: number
    let size: number
    if (name[at] === "%") {
      length = 3 * (1 + continuationBytes(Number.parseInt(name.slice(at + 1, at + 3), 16)))
      size = length
    } else {
      const codePoint = name.codePointAt(at)!
      length = codePoint > 0xffff ? 2 : 1
      size = codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4
    }
    if (used + size > bytes) break
    used += size
    at += length
  }
  return name.slice(0, at)
}

/**
 * A value's directory name: its escaped text (escape.ts) when that fits `budget` bytes, else the longest start of
 * it that leaves room for `%7E` and the value's hash. The name depends on the value, the column's kind and the
 * budget only, so every run, chunk and worker of an export names a value alike.
 */
export const partitionName = (value: string | null, textual: boolean, budget: number): string => {
  const escaped = escapePartitionValue(value, textual)
  if (value === null || escaped.length * 3 <= budget || byteLength(escaped) <= budget) return escaped
  const hash = valueHash(value)
  return `${cutEscaped(escaped, budget - BOUNDED_MARKER.length - hash.length)}${BOUNDED_MARKER}${hash}`
}

/** The columns of a `partition_by`, as its directories are named. */
export interface PartitionKeys {
  readonly keys: ReadonlyArray<string>
  /** Per key: whether its column is text (named fold-safe). */
  readonly textual: ReadonlyArray<boolean>
}

/** The directory of a part in a partition, `k1=v1/k2=v2/`, for the values of `partition.keys` in order. */
export const partitionDirectoryOf = (partition: PartitionKeys): ((values: ReadonlyArray<string | null>) => string) => {
  const budgets = partition.keys.map((key) => nameBudget(key, partition.keys.length))
  return (values) =>
    partition.keys.map((key, i) => `${key}=${partitionName(values[i] ?? null, partition.textual[i] ?? false, budgets[i]!)}/`).join("")
}

/**
 * Whether a directory's name is right for a recorded value: it decodes to the value, or it is a bounded name —
 * a decoded start of the value, `%7E` and the value's hash. Undefined when it is, else why not.
 */
export const nameMismatch = (name: string, value: string | null): string | undefined => {
  const marker = name.lastIndexOf(BOUNDED_MARKER)
  if (marker < 0) {
    const decoded = decodePartitionName(name)
    return decoded === value ? undefined : `reads ${decoded === null ? "NULL" : JSON.stringify(decoded)}`
  }
  if (value === null) return "is a bounded name, which no NULL has"
  if (name.slice(marker + BOUNDED_MARKER.length) !== valueHash(value)) return "ends with another value's hash"
  return value.startsWith(decodeURIComponent(name.slice(0, marker))) ? undefined : "starts with another value's text"
}
