/**
 * TLS for PostgreSQL connections (the postgres source and the PostgreSQL state store). Settings come from the
 * source's `tls:` block and from the connection URL's libpq parameters (`sslmode`, `sslrootcert`, `sslcert`,
 * `sslkey`, `sslpassword`); both say the same thing in two spellings, and when both are given they must agree.
 * Rivet, not postgres.js, reads them: the parameters are taken out of the query the driver sees, and the driver
 * gets an explicit `ssl` option (so a certificate file is read once, and a failure names the file).
 */

import * as fs from "node:fs"
import type { ConnectionOptions } from "node:tls"
import { tlsFailure as describeTlsFailure, type TlsServer } from "./tls-failure.js"
import type {
  TLS_FILE_ROLES} from "./tls.js";
import {
  isTlsProblem,
  mergeTls,
  nodeTlsOptions,
  TLS_MODES,
  type TlsBlock,
  type TlsFile,
  type TlsMode,
  type TlsProblem,
  type TlsSettings,
  unreadableTlsFile,
  URL_ORIGIN
} from "./tls.js"

export {
  BLOCK_TLS_MODES,
  isTlsProblem,
  TLS_MODES,
  type TlsBlock,
  type TlsFile,
  type TlsMode,
  type TlsProblem,
  type TlsSettings
} from "./tls.js"

/** The URL query parameters Rivet reads itself (libpq's names). */
const TLS_PARAMETERS = new Set(["sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword"])

const parameterName = (parameter: string): string => {
  const equals = parameter.indexOf("=")
  const raw = (equals < 0 ? parameter : parameter.slice(0, equals)).replace(/\+/g, " ")
  try {
    return decodeURIComponent(raw)
  } catch {
    return raw
  }
}

/** The query string without the TLS parameters (what the driver may still read: `search_path`, …). */
export const withoutTlsParameters = (query: string): string =>
  query === ""
    ? ""
    : query
        .split("&")
        .filter((parameter) => !TLS_PARAMETERS.has(parameterName(parameter)))
        .join("&")

/** The TLS parameters of a URL's query string, decoded; a parameter given twice keeps its last value. */
export const urlTlsParameters = (query: string): Readonly<Record<string, string>> => {
  const found: Record<string, string> = {}
  for (const [name, value] of new URLSearchParams(query)) if (TLS_PARAMETERS.has(name)) found[name] = value
  return found
}

export interface TlsInput {
  /** The URL's query string (without `?`). */
  readonly query: string
  /** The `tls:` block, when the config has one (the state store has none). */
  readonly block?: TlsBlock | undefined
  /** The key the block lives at, for messages (`source.tls`). */
  readonly blockPath?: string
  /** Where the block's relative paths start: the config file's directory. */
  readonly configDir?: string
  /** Where the URL's relative paths start (as with libpq: the working directory). */
  readonly cwd?: string
}

const DEFAULT_SETTINGS: TlsSettings = {
  mode: "verify-full",
  modeOrigin: "the default when TLS settings are given",
  verifyChain: true,
  verifyHost: true
}

/**
 * The TLS settings of a connection, `undefined` when neither the block nor the URL says anything about TLS (the
 * driver's default: no TLS), or a problem: a URL parameter with a value libpq does not know, or the block and
 * the URL disagreeing about the same setting.
 */
export const resolveTls = (input: TlsInput): TlsSettings | TlsProblem | undefined => {
  const params = urlTlsParameters(input.query)
  const urlMode = params["sslmode"]
  if (urlMode !== undefined && !(TLS_MODES as ReadonlyArray<string>).includes(urlMode)) {
    return {
      message: `${URL_ORIGIN} has sslmode=${urlMode}, which is not a libpq sslmode`,
      hint: `use one of ${TLS_MODES.join(", ")}`
    }
  }
  const fileParameter = (parameter: string) => {
    const value = params[parameter]
    // `sslrootcert=system` (libpq 16) means the system's CA store: Node's default, i.e. no file.
    return value === undefined || value === "" || (parameter === "sslrootcert" && value === "system") ? undefined : { parameter, path: value }
  }
  const settings = mergeTls({
    url: {
      mode: urlMode === undefined ? undefined : { parameter: "sslmode", written: urlMode, mode: urlMode as TlsMode },
      ca: fileParameter("sslrootcert"),
      cert: fileParameter("sslcert"),
      key: fileParameter("sslkey"),
      passphrase: params["sslpassword"]
    },
    block: input.block,
    blockPath: input.blockPath,
    configDir: input.configDir,
    cwd: input.cwd
  })
  if (isTlsProblem(settings)) return settings
  if (settings === undefined) {
    if (Object.keys(params).length === 0) return undefined
    // Only `sslrootcert=system` or `sslpassword`: TLS asked for, in the default mode.
    return { ...DEFAULT_SETTINGS, passphrase: params["sslpassword"] }
  }
  const mode = settings.mode
  if (params["sslrootcert"] === "system" && (mode === "require" || mode === "allow" || mode === "prefer" || mode === "disable")) {
    return {
      message: `sslrootcert=system in ${URL_ORIGIN} needs sslmode verify-full (or verify-ca), not ${mode}`,
      hint: "set sslmode=verify-full, or drop sslrootcert=system"
    }
  }
  return settings
}

/** What postgres.js takes as `ssl`. */
export type SslOption = false | "allow" | "prefer" | ConnectionOptions

/** Reads a TLS file, or says which file could not be read and why. */
const readTlsFile = (file: TlsFile, role: keyof typeof TLS_FILE_ROLES): Buffer | TlsProblem => {
  try {
    return fs.readFileSync(file.path)
  } catch (cause) {
    const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
    const why = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : code === "EISDIR" ? "it is a directory" : String(cause)
    return unreadableTlsFile(file, role, why)
  }
}

/** The postgres.js `ssl` option of the settings, reading the certificate files; or which file could not be read. */
export const sslOption = (settings: TlsSettings): SslOption | TlsProblem => {
  switch (settings.mode) {
    case "disable":
      return false
    case "allow":
    case "prefer":
      return settings.mode
    default:
      break
  }
  const ca = settings.ca === undefined ? undefined : readTlsFile(settings.ca, "ca")
  if (isTlsProblem(ca)) return ca
  const withClient = settings.cert !== undefined && settings.key !== undefined
  const cert = withClient ? readTlsFile(settings.cert!, "cert") : undefined
  if (isTlsProblem(cert)) return cert
  const key = withClient ? readTlsFile(settings.key!, "key") : undefined
  if (isTlsProblem(key)) return key
  return nodeTlsOptions(settings, { ca, cert, key })
}

const POSTGRES: TlsServer = {
  name: "PostgreSQL",
  caParameter: "sslrootcert",
  certificateSetting: "ssl_cert_file on the server",
  noTlsHint:
    "the server may not accept TLS (ssl = off in postgresql.conf): turn ssl on there, or set the mode to disable if an unencrypted connection is acceptable"
}

/**
 * A TLS failure of a connection to PostgreSQL, said so the user can act on it (naming the CA file), or undefined when
 * `cause` is no TLS failure. `where` names the server (the masked URL).
 */
export const tlsFailure = (cause: unknown, settings: TlsSettings | undefined, where: string): TlsProblem | undefined =>
  describeTlsFailure(cause, settings, where, POSTGRES)
