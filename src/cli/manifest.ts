import { createRequire } from "node:module"

/** Rivet's own package.json. This module sits two levels below the package root both in dist/cli and dist/bundle. */
export const manifest = createRequire(import.meta.url)("../../package.json") as {
  readonly name: string
  readonly version: string
  readonly dependencies: Readonly<Record<string, string>>
  readonly devDependencies: Readonly<Record<string, string>>
}
