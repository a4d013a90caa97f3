import * as fs from "node:fs"
import * as path from "node:path"
import { unreadableReason } from "../core/source/connection.js"
import { joinPath } from "./issues.js"

/** An environment variable a `*_env` key names that the environment does not provide. */
export interface MissingEnvVariable {
  /** The key's config path, e.g. `source.url_env` or `exports[1].destination.secret_key_env`. */
  readonly path: string
  readonly variable: string
  readonly empty: boolean
}

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/**
 * Every key named `*_env` (the convention of every block, built-in or plugin: `url_env`, `access_key_env`, …) whose
 * value names an environment variable that is unset or empty — run would fail on it when it connects. A value that
 * is not a variable name is left to the block's own decoding, which reports it.
 */
export const missingEnvVariables = (
  value: unknown,
  env: Readonly<Record<string, string | undefined>>
): ReadonlyArray<MissingEnvVariable> => {
  const found: Array<MissingEnvVariable> = []
  const walk = (node: unknown, path: string): void => {
    if (Array.isArray(node)) {
      node.forEach((item, index) => walk(item, joinPath(path, [index])))
      return
    }
    if (node === null || typeof node !== "object") return
    for (const [key, child] of Object.entries(node)) {
      const at = joinPath(path, [key])
      if (key.endsWith("_env") && typeof child === "string" && VARIABLE_NAME.test(child)) {
        const set = env[child]
        if (set === undefined || set === "") found.push({ path: at, variable: child, empty: set === "" })
      } else walk(child, at)
    }
  }
  walk(value, "")
  return found
}

/** A `*_file` key of the source (`url_file`, `password_file`) or its `tls:` block naming a file that does not exist or cannot be read. */
export interface UnreadableFile {
  readonly path: string
  readonly file: string
  readonly reason: string
}

const blockOf = (node: unknown, key: string): Record<string, unknown> | undefined => {
  const child = node !== null && typeof node === "object" ? (node as Record<string, unknown>)[key] : undefined
  return child !== null && typeof child === "object" ? (child as Record<string, unknown>) : undefined
}

/**
 * The `*_file` keys of the source (`url_file`, `password_file`) and of its `tls:` block (`ca_file`, `cert_file`,
 * `key_file`) whose file, relative to the config file's directory, is missing or unreadable: the connection would
 * fail on it.
 */
export const unreadableSourceFiles = (value: unknown, configDir: string): ReadonlyArray<UnreadableFile> => {
  const source = blockOf(value, "source")
  const blocks = [
    { at: "source", keys: source },
    { at: "source.tls", keys: blockOf(source, "tls") }
  ]
  return blocks.flatMap(({ at, keys }) =>
    Object.entries(keys ?? {}).flatMap(([key, given]): ReadonlyArray<UnreadableFile> => {
      if (!key.endsWith("_file") || typeof given !== "string" || given === "") return []
      const file = path.resolve(configDir, given)
      try {
        if (!fs.statSync(file).isFile()) return [{ path: `${at}.${key}`, file, reason: "is not a file" }]
        fs.accessSync(file, fs.constants.R_OK)
        return []
      } catch (cause) {
        return [{ path: `${at}.${key}`, file, reason: unreadableReason(cause) }]
      }
    })
  )
}
