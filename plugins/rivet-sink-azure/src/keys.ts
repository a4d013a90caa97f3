/** Azure's limit on the length of a blob name (prefix included). */
export const MAX_BLOB_NAME_LENGTH = 1024

/**
 * Why a key (relative to the prefix) is refused: Rivet's key rules — relative, `/` between segments, no empty,
 * `.` or `..` segment — plus Azure's length limit.
 */
export const invalidKeyReason = (key: string, prefix: string): string | undefined => {
  if (key.length === 0) return "the key is empty"
  if (key.includes("\\")) return "the key contains a backslash (use / between segments)"
  if ([...key].some((char) => char.charCodeAt(0) < 0x20 || char.charCodeAt(0) === 0x7f)) {
    return "the key contains a control character"
  }
  if (key.startsWith("/") || /^[a-zA-Z]:/.test(key)) return "the key is absolute (keys are relative to the destination)"
  const segments = key.split("/")
  if (segments.includes("..")) return "the key contains a `..` segment"
  if (segments.some((segment) => segment === "" || segment === ".")) return "the key contains an empty or `.` segment"
  if ((prefix + key).length > MAX_BLOB_NAME_LENGTH) return `prefix + key exceed Azure's ${MAX_BLOB_NAME_LENGTH}-character blob name limit`
  return undefined
}
