/**
 * Why an object key is unsafe, or undefined when it is fine — sinks call it before touching their store.
 * Object keys are relative to the destination root and use `/` between segments. Anything that could escape
 * the root or mean different things on different systems is refused before a file is touched.
 */
export const invalidKeyReason = (key: string): string | undefined => {
  if (key.length === 0) return "the key is empty"
  if (key.includes("\\")) return "the key contains a backslash (use / between segments)"
  if (key.includes("\0")) return "the key contains a NUL character"
  if (key.startsWith("/") || /^[a-zA-Z]:/.test(key)) return "the key is absolute (keys are relative to the destination)"
  const segments = key.split("/")
  if (segments.some((segment) => segment === "..")) return "the key contains a `..` segment"
  if (segments.some((segment) => segment === "" || segment === ".")) return "the key contains an empty or `.` segment"
  return undefined
}
