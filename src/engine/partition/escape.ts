/**
 * Partition directory names the way Hive writes them (FileUtils.escapePathName, also Spark's
 * ExternalCatalogUtils): the characters below become `%XX` (uppercase hex of the byte), everything else —
 * non-ASCII letters included — stays as its UTF-8 bytes. DuckDB, Spark, Trino and Athena decode `%XX` when they
 * read `col=value` back. Hive writes both NULL and the empty string as `__HIVE_DEFAULT_PARTITION__`, which every
 * reader gives back as NULL; readers compare the name before decoding it, so the literal text is written with its
 * first `_` escaped (`%5F_HIVE_DEFAULT_PARTITION__`) and reads back as that text.
 *
 * Text columns are also written fold-safe: a case-insensitive file system (macOS, Windows, and S3 objects
 * downloaded to one) would merge `Abc` and `abc`, a normalisation-insensitive one the NFC and NFD forms of `café`.
 * So a character that a case-insensitive comparison could confuse with another (an uppercase letter, `ß`, `ς`) is
 * escaped, and so is every non-ASCII character of a text that is not in NFC: two values then never give names
 * that such a file system takes as one, and readers still decode each name to its exact value.
 */
export const HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"

const ESCAPED = new Set(['"', "#", "%", "'", "*", "/", ":", "=", "?", "\\", "\x7F", "{", "[", "]", "^"])

const needsHiveEscape = (char: string): boolean => {
  const code = char.charCodeAt(0)
  return code <= 0x1f || ESCAPED.has(char)
}

/** Whether the character is its own lowercase and the lowercase of its uppercase: no other character folds onto it. */
const foldStable = (char: string): boolean => {
  const code = char.charCodeAt(0)
  if (code < 0x80) return code < 0x41 || code > 0x5a
  const lower = char.toLowerCase()
  return lower === char && char.toUpperCase().toLowerCase() === char
}

const utf8 = new TextEncoder()

const hexEscape = (char: string): string => {
  let out = ""
  for (const byte of utf8.encode(char)) out += `%${byte.toString(16).toUpperCase().padStart(2, "0")}`
  return out
}

// A value without a character above U+007F is ASCII, and so already in NFC.
const NON_ASCII = /[\u0080-\uFFFF]/

/**
 * One value as a path segment's right-hand side; NULL and "" → `__HIVE_DEFAULT_PARTITION__`. `textual` (a text
 * column) makes the name fold-safe as described above; other columns' texts are rendered by Rivet in one case
 * and one form, so two of their values never fold together.
 */
export const escapePartitionValue = (value: string | null, textual = false): string => {
  if (value === null || value === "") return HIVE_DEFAULT_PARTITION
  const escapeNonAscii = textual && NON_ASCII.test(value) && value.normalize("NFC") !== value
  let out = ""
  for (const char of value) {
    // NUL (escaped by the test below) has no place in a key: Hive leaves it to the file system, which rejects it.
    const escape = needsHiveEscape(char) || (textual && (!foldStable(char) || (escapeNonAscii && char.charCodeAt(0) > 0x7f)))
    out += escape ? hexEscape(char) : char
  }
  return out === HIVE_DEFAULT_PARTITION ? `%5F${out.slice(1)}` : out
}

/** `%XX` sequences decoded as UTF-8 bytes; throws on a malformed sequence. */
export const decodePartitionName = (name: string): string | null => (name === HIVE_DEFAULT_PARTITION ? null : decodeURIComponent(name))

/** The `k=v` directories of a path, values as written (still escaped), in order. */
export const partitionSegments = (path: string): ReadonlyArray<readonly [string, string]> =>
  path
    .split("/")
    .slice(0, -1)
    .filter((segment) => segment.includes("="))
    .map((segment) => {
      const at = segment.indexOf("=")
      return [segment.slice(0, at), segment.slice(at + 1)] as const
    })

/** Reads `k=v` segments back (`%XX` decoded as UTF-8 bytes; the default partition as null), for validation. */
export const parsePartitionPath = (path: string): ReadonlyArray<readonly [string, string | null]> =>
  partitionSegments(path).map(([key, name]) => [key, decodePartitionName(name)] as const)
