/**
 * TLS for PostgreSQL connections (the postgres source and the PostgreSQL state store). Settings come from the
 * source's `tls:` block and from the connection URL's libpq parameters (`sslmode`, `sslrootcert`, `sslcert`,
 * `sslkey`, `sslpassword`); both say the same thing in two spellings, and when both are given they must agree.
 * Rivet, not postgres.js, reads them: the parameters are taken out of the query the driver sees, and the driver
 * gets an explicit `ssl` option (so a certificate file is read once, and a failure names the file).
 */

import * as fs from "node:fs"
import * as path from "node:path"
import type { ConnectionOptions } from "node:tls"

/** libpq's `sslmode` values; the `tls:` block accepts `disable`, `require`, `verify-ca` and `verify-full`. */
export const TLS_MODES = ["disable", "allow", "prefer", "require", "verify-ca", "verify-full"] as const
export type TlsMode = (typeof TLS_MODES)[number]

/** The modes of the `tls:` block. */
export const BLOCK_TLS_MODES = ["disable", "require", "verify-ca", "verify-full"] as const

/** The `tls:` block as decoded (paths as written, relative to the config file's directory). */
export interface TlsBlock {
  readonly mode?: (typeof BLOCK_TLS_MODES)[number] | undefined
  readonly ca_file?: string | undefined
  readonly cert_file?: string | undefined
  readonly key_file?: string | undefined
  readonly accept_invalid_hostnames?: boolean | undefined
}

/** A file the connection reads, and the key or parameter that named it (for messages). */
export interface TlsFile {
  readonly path: string
  readonly origin: string
}

/** What the connection does about TLS, merged from the block and the URL. */
export interface TlsSettings {
  readonly mode: TlsMode
  /** Where the mode was set (`source.tls.mode`, `sslmode in the connection URL`, or the default's reason). */
  readonly modeOrigin: string
  /** The CA certificate(s) the server's certificate must chain to; absent: Node's default CA store. */
  readonly ca?: TlsFile | undefined
  readonly cert?: TlsFile | undefined
  readonly key?: TlsFile | undefined
  /** The client key's passphrase (libpq's `sslpassword`). */
  readonly passphrase?: string | undefined
  /** Whether the server certificate's chain is checked (verify-ca, verify-full, or require with a CA file). */
  readonly verifyChain: boolean
  /** Whether the host name must match the certificate (verify-full without `accept_invalid_hostnames`). */
  readonly verifyHost: boolean
}

/** Why the TLS settings cannot be used. */
export interface TlsProblem {
  readonly message: string
  readonly hint: string
}

export const isTlsProblem = (value: unknown): value is TlsProblem =>
  typeof value === "object" && value !== null && "message" in value && "hint" in value

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

const URL_ORIGIN = "the connection URL"

/**
 * The TLS settings of a connection, `undefined` when neither the block nor the URL says anything about TLS (the
 * driver's default: no TLS), or a problem: a URL parameter with a value libpq does not know, or the block and
 * the URL disagreeing about the same setting.
 */
export const resolveTls = (input: TlsInput): TlsSettings | TlsProblem | undefined => {
  const block = input.block
  const at = input.blockPath ?? "source.tls"
  const params = urlTlsParameters(input.query)
  const cwd = input.cwd ?? process.cwd()
  const configDir = input.configDir ?? cwd
  if (block === undefined && Object.keys(params).length === 0) return undefined

  const urlMode = params["sslmode"]
  if (urlMode !== undefined && !(TLS_MODES as ReadonlyArray<string>).includes(urlMode)) {
    return {
      message: `${URL_ORIGIN} has sslmode=${urlMode}, which is not a libpq sslmode`,
      hint: `use one of ${TLS_MODES.join(", ")}`
    }
  }
  if (block?.mode !== undefined && urlMode !== undefined && block.mode !== urlMode) {
    return {
      message: `${at}.mode is ${block.mode} but ${URL_ORIGIN} has sslmode=${urlMode}`,
      hint: `say it in one place (remove sslmode from the URL or ${at}.mode), or make them agree`
    }
  }

  const file = (key: "ca_file" | "cert_file" | "key_file", parameter: string): TlsFile | TlsProblem | undefined => {
    const fromBlock = block?.[key]
    const fromUrl = params[parameter]
    const blockFile = fromBlock === undefined ? undefined : { path: path.resolve(configDir, fromBlock), origin: `${at}.${key}` }
    // `sslrootcert=system` (libpq 16) means the system's CA store: Node's default, i.e. no file.
    const urlFile =
      fromUrl === undefined || fromUrl === "" || (parameter === "sslrootcert" && fromUrl === "system")
        ? undefined
        : { path: path.resolve(cwd, fromUrl), origin: `${parameter} in ${URL_ORIGIN}` }
    if (blockFile !== undefined && urlFile !== undefined && blockFile.path !== urlFile.path) {
      return {
        message: `${at}.${key} is ${blockFile.path} but ${URL_ORIGIN} has ${parameter}=${urlFile.path}`,
        hint: `say it in one place (remove ${parameter} from the URL or ${at}.${key}), or make them name the same file (block paths are relative to the config file's directory, URL paths to the working directory)`
      }
    }
    return blockFile ?? urlFile
  }
  const ca = file("ca_file", "sslrootcert")
  if (isTlsProblem(ca)) return ca
  const cert = file("cert_file", "sslcert")
  if (isTlsProblem(cert)) return cert
  const key = file("key_file", "sslkey")
  if (isTlsProblem(key)) return key
  if ((cert === undefined) !== (key === undefined)) {
    const [has, lacks] = cert === undefined ? ["key", "certificate"] : ["certificate", "key"]
    return {
      message: `a client ${has} is given (${(cert ?? key)!.origin}) without its ${lacks}`,
      hint: `set both ${at}.cert_file and ${at}.key_file (or sslcert and sslkey in the URL)`
    }
  }

  const given = block?.mode ?? (urlMode as TlsMode | undefined)
  const mode: TlsMode = given ?? "verify-full"
  const modeOrigin =
    block?.mode !== undefined ? `${at}.mode` : urlMode !== undefined ? `sslmode in ${URL_ORIGIN}` : "the default when TLS settings are given"
  const systemCa = params["sslrootcert"] === "system"
  if (systemCa && (mode === "require" || mode === "allow" || mode === "prefer" || mode === "disable")) {
    return {
      message: `sslrootcert=system in ${URL_ORIGIN} needs sslmode verify-full (or verify-ca), not ${mode}`,
      hint: "set sslmode=verify-full, or drop sslrootcert=system"
    }
  }
  // As libpq: `require` with a CA file checks the chain as verify-ca does.
  const verifyChain = mode === "verify-ca" || mode === "verify-full" || (mode === "require" && ca !== undefined)
  const verifyHost = mode === "verify-full" && block?.accept_invalid_hostnames !== true
  return {
    mode,
    modeOrigin,
    ca,
    cert,
    key,
    passphrase: params["sslpassword"],
    verifyChain,
    verifyHost
  }
}

/** What postgres.js takes as `ssl`. */
export type SslOption = false | "allow" | "prefer" | ConnectionOptions

/** Reads a TLS file, or says which file could not be read and why. */
const readTlsFile = (file: TlsFile, what: string): Buffer | TlsProblem => {
  try {
    return fs.readFileSync(file.path)
  } catch (cause) {
    const code = typeof cause === "object" && cause !== null && "code" in cause ? String(cause.code) : ""
    const why = code === "ENOENT" ? "no such file" : code === "EACCES" ? "permission denied" : code === "EISDIR" ? "it is a directory" : String(cause)
    return {
      message: `cannot read the ${what} ${file.path} (${file.origin}): ${why}`,
      hint: `check the path (relative paths in the config file start at its directory) and that this user may read it`
    }
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
  const options: { -readonly [K in keyof ConnectionOptions]: ConnectionOptions[K] } = {
    rejectUnauthorized: settings.verifyChain
  }
  if (settings.ca !== undefined) {
    const ca = readTlsFile(settings.ca, "CA certificate file")
    if (isTlsProblem(ca)) return ca
    options.ca = ca
  }
  if (settings.cert !== undefined && settings.key !== undefined) {
    const cert = readTlsFile(settings.cert, "client certificate file")
    if (isTlsProblem(cert)) return cert
    const key = readTlsFile(settings.key, "client key file")
    if (isTlsProblem(key)) return key
    options.cert = cert
    options.key = key
    if (settings.passphrase !== undefined) options.passphrase = settings.passphrase
  }
  if (settings.verifyChain && !settings.verifyHost) options.checkServerIdentity = () => undefined
  return options
}

const UNKNOWN_CA = new Set([
  "UNABLE_TO_VERIFY_LEAF_SIGNATURE",
  "SELF_SIGNED_CERT_IN_CHAIN",
  "DEPTH_ZERO_SELF_SIGNED_CERT",
  "UNABLE_TO_GET_ISSUER_CERT_LOCALLY",
  "UNABLE_TO_GET_ISSUER_CERT",
  "CERT_SIGNATURE_FAILURE"
])

const codeOf = (cause: unknown): string | undefined =>
  typeof cause === "object" && cause !== null && "code" in cause && typeof cause.code === "string" ? cause.code : undefined

const messageOf = (cause: unknown): string => (cause instanceof Error ? cause.message : String(cause))

/** Where the trusted CAs come from, for messages. */
const caText = (settings: TlsSettings): string =>
  settings.ca === undefined ? "Node's default CA store (no CA file is set)" : `the CA file ${settings.ca.path} (${settings.ca.origin})`

/**
 * A TLS failure of a connection, said so the user can act on it (naming the CA file), or undefined when `cause` is
 * no TLS failure. `where` names the server (the masked URL). Never retryable: the same certificate fails again.
 */
export const tlsFailure = (cause: unknown, settings: TlsSettings | undefined, where: string): TlsProblem | undefined => {
  if (settings === undefined || settings.mode === "disable") return undefined
  const code = codeOf(cause)
  const text = messageOf(cause)
  if (code !== undefined && UNKNOWN_CA.has(code)) {
    return {
      message: `TLS: the certificate of the PostgreSQL server at ${where} is not signed by a CA trusted here, ${caText(settings)} (${code}: ${text})`,
      hint:
        settings.ca === undefined
          ? "set source.tls.ca_file (or sslrootcert in the URL) to the CA certificate that signed the server's certificate"
          : "point the CA file at the certificate of the CA that signed the server's certificate (the whole chain up to the root, in PEM)"
    }
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return {
      message: `TLS: the certificate of the PostgreSQL server at ${where} is not valid for the host name dialled (${text}); mode ${settings.mode} from ${settings.modeOrigin}`,
      hint: "connect with a host name the certificate lists (its subjectAltName), or set source.tls.mode: verify-ca (or accept_invalid_hostnames: true) to check only the CA"
    }
  }
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") {
    return {
      message: `TLS: the certificate of the PostgreSQL server at ${where} ${code === "CERT_HAS_EXPIRED" ? "has expired" : "is not valid yet"} (${code}), checked against ${caText(settings)}`,
      hint: "renew the server's certificate (ssl_cert_file on the server), or check this machine's clock"
    }
  }
  if (/before secure TLS connection was established/i.test(text) || code === "EPROTO") {
    return {
      message: `TLS: the PostgreSQL server at ${where} closed the connection instead of starting TLS (mode ${settings.mode} from ${settings.modeOrigin}): ${text}`,
      hint: "the server may not accept TLS (ssl = off in postgresql.conf): turn ssl on there, or set the mode to disable if an unencrypted connection is acceptable"
    }
  }
  if (code !== undefined && (code.startsWith("ERR_TLS") || code.startsWith("ERR_SSL") || code.startsWith("CERT_"))) {
    return {
      message: `TLS: connecting to the PostgreSQL server at ${where} failed (${code}: ${text}), checked against ${caText(settings)}`,
      hint: "check the certificate files and the server's TLS settings"
    }
  }
  return undefined
}
