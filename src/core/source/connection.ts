import * as fs from "node:fs"
import * as path from "node:path"
import * as Redacted from "effect/Redacted"

/**
 * Where a database source connects, as its config gives it: a URL (`url`, `url_env`, `url_file`) or its parts
 * (`host`, `port`, `user`, `database`, and the password from `password`, `password_env` or `password_file`). Both
 * become one URL, which the source parses as it parses any other; neither the URL nor the password is ever part of a
 * message.
 */

/** The connection keys of a source block (see `connectionUrlFields`). */
export interface ConnectionKeys {
  readonly url?: Redacted.Redacted<string> | undefined
  readonly url_env?: string | undefined
  readonly url_file?: string | undefined
  readonly host?: string | undefined
  readonly port?: number | undefined
  readonly user?: string | undefined
  readonly database?: string | undefined
  readonly password?: Redacted.Redacted<string> | undefined
  readonly password_env?: string | undefined
  readonly password_file?: string | undefined
}

const URL_KEYS = ["url", "url_env", "url_file"] as const
const PART_KEYS = ["host", "port", "user", "database", "password", "password_env", "password_file"] as const
const PASSWORD_KEYS = ["password", "password_env", "password_file"] as const

const listed = (keys: ReadonlyArray<string>) => keys.map((key) => `\`${key}\``).join(" and ")

/**
 * Why the keys do not name one connection (for the block's filter), or undefined. `others`: the source's own ways
 * to connect that exclude these (postgres: `embedded`).
 */
export const connectionProblem = (config: ConnectionKeys, others: Readonly<Record<string, unknown>> = {}): string | undefined => {
  const urls = URL_KEYS.filter((key) => config[key] !== undefined)
  const parts = PART_KEYS.filter((key) => config[key] !== undefined)
  const other = Object.keys(others).filter((key) => others[key] !== undefined)
  const ways = [...URL_KEYS, "host", ...Object.keys(others)].map((key) => `\`${key}\``).join(", ")
  const methods = urls.length + (parts.length > 0 ? 1 : 0) + other.length
  if (methods === 0) return `set one of ${ways} to say which database to read`
  if (urls.length + other.length > 1 || (parts.length > 0 && urls.length + other.length > 0)) {
    return `set only one way to connect (found ${listed([...urls, ...other, ...(parts.length > 0 ? [parts[0]!] : [])])}): a URL, or host/user/database with their password`
  }
  if (parts.length === 0) return undefined
  const missing = (["host", "user", "database"] as const).filter((key) => config[key] === undefined)
  if (missing.length > 0) return `a connection given by its parts needs ${listed(missing)} too (or use \`url\` / \`url_env\`)`
  const passwords = PASSWORD_KEYS.filter((key) => config[key] !== undefined)
  if (passwords.length > 1) return `set at most one of ${listed(PASSWORD_KEYS)} (found ${listed(passwords)})`
  return undefined
}

export interface ResolvedConnection {
  readonly url: string
  /** Where it came from, for messages: `source.url`, `environment variable DATABASE_URL (source.url_env)`, … */
  readonly origin: string
}

export interface ConnectionTemplate {
  /** `postgres`, `mysql`. */
  readonly scheme: string
  readonly defaultPort: number
  /** A variable name for hints, e.g. DATABASE_URL. */
  readonly exampleVariable: string
}

export type ConnectionFailure = { readonly message: string; readonly hint: string }

/** The first line of a file, relative to the config's directory; a failure names the key and the file. */
/** Why a file could not be read, as the end of a sentence naming it: `does not exist`, `cannot be read (…)`. */
export const unreadableReason = (cause: unknown): string => {
  const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
  return code === "ENOENT" ? "does not exist" : code === "EACCES" ? "cannot be read (permission denied)" : `cannot be read (${code || String(cause)})`
}

const readSecretFile = (key: string, given: string, configDir: string): string | ConnectionFailure => {
  const file = path.resolve(configDir, given)
  try {
    // A secret file usually ends with a newline (echo, an editor, a Kubernetes secret written by a tool).
    return fs.readFileSync(file, "utf8").replace(/\r?\n$/, "")
  } catch (cause) {
    return { message: `the file ${file} (source.${key}) ${unreadableReason(cause)}`, hint: `point source.${key} at a readable file, relative to the config file's directory` }
  }
}

const fromEnv = (key: string, name: string, env: Readonly<Record<string, string | undefined>>, example: string): string | ConnectionFailure => {
  const value = env[name]
  return value === undefined || value === ""
    ? { message: `environment variable ${name} (source.${key}) is not set`, hint: `set it, e.g. export ${name}=${example}` }
    : value
}

const isFailure = (value: string | ConnectionFailure): value is ConnectionFailure => typeof value !== "string"

/** The connection URL the keys name (checked by `connectionProblem` already), or why it cannot be had. */
export const resolveConnection = (
  config: ConnectionKeys,
  context: { readonly env: Readonly<Record<string, string | undefined>>; readonly configDir: string },
  template: ConnectionTemplate
): ResolvedConnection | ConnectionFailure => {
  const example = `${template.scheme}://user:password@host:${template.defaultPort}/database`
  if (config.url !== undefined) return { url: Redacted.value(config.url), origin: "source.url" }
  if (config.url_env !== undefined) {
    const url = fromEnv("url_env", config.url_env, context.env, example)
    return isFailure(url) ? url : { url, origin: `environment variable ${config.url_env} (source.url_env)` }
  }
  if (config.url_file !== undefined) {
    const url = readSecretFile("url_file", config.url_file, context.configDir)
    return isFailure(url) ? url : { url: url.trim(), origin: `the file of source.url_file` }
  }
  const password =
    config.password !== undefined
      ? Redacted.value(config.password)
      : config.password_env !== undefined
        ? fromEnv("password_env", config.password_env, context.env, "<the password>")
        : config.password_file !== undefined
          ? readSecretFile("password_file", config.password_file, context.configDir)
          : undefined
  if (password !== undefined && isFailure(password)) return password
  const credentials = `${encodeURIComponent(config.user ?? "")}${password === undefined ? "" : `:${encodeURIComponent(password)}`}`
  // An IPv6 literal is bracketed in a URL.
  const host = config.host!.includes(":") && !config.host!.startsWith("[") ? `[${config.host}]` : config.host!
  const url = `${template.scheme}://${credentials}@${host}:${config.port ?? template.defaultPort}/${encodeURIComponent(config.database ?? "")}`
  return { url, origin: "source.host, source.user and source.database" }
}
