/**
 * Partition directory names the way Hive writes them (FileUtils.escapePathName, also Spark's
 * ExternalCatalogUtils): the characters below become `%XX` (uppercase hex of the byte), everything else —
 * non-ASCII letters included — stays as its UTF-8 bytes. DuckDB, Spark, Trino and Athena decode `%XX` when they
 * read `col=value` back. Hive writes both NULL and the empty string as `__HIVE_DEFAULT_PARTITION__`, which every
 * reader gives back as NULL.
 */
export const HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

const ESCAPED = new Set(['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7F", "{", "[", "]", "^"])

const needsEscape = (char: string): boolean => {
  const code = char.charCodeAt(0)
  return (code >= 0x01 && code <= 0x1f) || ESCAPED.has(char)
}

const hex = (code: number): string => `%${code.toString(16).toUpperCase().padStart(2, "0")}`

/** One value as a path segment's right-hand side; NULL and "" → `__HIVE_DEFAULT_PARTITION__`. */
export const escapePartitionValue = (value: string | null): string => {
  if (value === null || value === "") return HIVE_DEFAULT_PARTITION
  let out = ""
  for (const char of value) {
    // NUL has no place in a key (sinks refuse it): Hive leaves it to the file system, which rejects it too.
    if (char === "\0") out += "%00"
    else out += needsEscape(char) ? hex(char.charCodeAt(0)) : char
  }
  return out
}

/** `{key}={escaped value}` — one directory of a part's path. */
export const partitionSegment = (key: string, value: string | null): string => `${key}=${escapePartitionValue(value)}`

/** The directory of a part in a partition: `k1=v1/k2=v2/`. */
export const partitionDirectory = (keys: ReadonlyArray<string>, values: ReadonlyArray<string | null>): string =>
  keys.map((key, index) => `${partitionSegment(key, values[index] ?? null)}/`).join("")

/** Reads `k=v` segments back (`%XX` decoded as UTF-8 bytes; the default partition as null), for validation. */
export const parsePartitionPath = (path: string): ReadonlyArray<readonly [string, string | null]> =>
  path
    .split("/")
    .slice(0, -1)
    .filter((segment) => segment.includes("="))
    .map((segment) => {
      const at = segment.indexOf("=")
      const raw = segment.slice(at + 1)
      return [segment.slice(0, at), raw === HIVE_DEFAULT_PARTITION ? null : decodeURIComponent(raw)] as const
    })
