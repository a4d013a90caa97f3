/**
 * PostgreSQL's NAMEDATALEN - 1: the server silently truncates a longer identifier to its first 63 bytes, so a
 * long `table:` could name (and export) a different existing table.
 */
export const MAX_IDENTIFIER_BYTES = 63

/** Why `name` cannot be an identifier because of its length, or undefined. */
export const identifierLengthProblem = (what: string, name: string): string | undefined => {
  const bytes = Buffer.byteLength(name, "utf8")
  return bytes <= MAX_IDENTIFIER_BYTES
    ? undefined
    : `${what} ${JSON.stringify(name.length > 80 ? `${name.slice(0, 80)}…` : name)} is ${bytes} bytes long: identifiers are at most ${MAX_IDENTIFIER_BYTES} bytes (UTF-8) — PostgreSQL would silently cut it to its first ${MAX_IDENTIFIER_BYTES} bytes and read another object`
}
