/**
 * TLS settings both database sources share: the `tls:` block (`mode`, `ca_file`, `cert_file`, `key_file`,
 * `accept_invalid_hostnames`), merged with what the connection URL says in the server's own spelling (libpq's
 * `sslmode`/`sslrootcert`…, MySQL's `ssl-mode`/`ssl-ca`…), the Node TLS options they give, and TLS failures said so
 * a user can act on them (naming the CA file). Each source turns its URL parameters into `UrlTls` and its driver's
 * option from `nodeTlsOptions`.
 */

import * as path from "node:path"
import type { ConnectionOptions } from "node:tls"

/** The modes a connection can have (libpq's names; MySQL's `PREFERRED` is `prefer`, `VERIFY_IDENTITY` `verify-full`). */
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

export const URL_ORIGIN = "the connection URL"

/** A URL's TLS parameters in the server's spelling: the parameter's name and its value (mode already mapped). */
export interface UrlTls {
  readonly mode?: { readonly parameter: string; readonly written: string; readonly mode: TlsMode } | undefined
  readonly ca?: { readonly parameter: string; readonly path: string } | undefined
  readonly cert?: { readonly parameter: string; readonly path: string } | undefined
  readonly key?: { readonly parameter: string; readonly path: string } | undefined
  readonly passphrase?: string | undefined
}

export interface MergeInput {
  readonly url: UrlTls
  /** The `tls:` block, when the config has one (the state store has none). */
  readonly block?: TlsBlock | undefined
  /** The key the block lives at, for messages (`source.tls`). */
  readonly blockPath?: string | undefined
  /** Where the block's relative paths start: the config file's directory. */
  readonly configDir?: string | undefined
  /** Where the URL's relative paths start (as with libpq and the mysql client: the working directory). */
  readonly cwd?: string | undefined
}

/**
 * The TLS settings of a block and a URL's parameters, `undefined` when neither says anything (the driver's default:
 * no TLS), or a problem: the two disagreeing about the same setting, or a client certificate without its key.
 * Without a mode, a connection given a TLS setting is `verify-full`.
 */
export const mergeTls = (input: MergeInput): TlsSettings | TlsProblem | undefined => {
  const { block, url } = input
  const at = input.blockPath ?? "source.tls"
  const cwd = input.cwd ?? process.cwd()
  const configDir = input.configDir ?? cwd
  if (block === undefined && url.mode === undefined && url.ca === undefined && url.cert === undefined && url.key === undefined) {
    return undefined
  }
  if (block?.mode !== undefined && url.mode !== undefined && block.mode !== url.mode.mode) {
    return {
      message: `${at}.mode is ${block.mode} but ${URL_ORIGIN} has ${url.mode.parameter}=${url.mode.written}`,
      hint: `say it in one place (remove ${url.mode.parameter} from the URL or ${at}.mode), or make them agree`
    }
  }
  const file = (key: "ca_file" | "cert_file" | "key_file", fromUrl: UrlTls["ca"]): TlsFile | TlsProblem | undefined => {
    const fromBlock = block?.[key]
    const blockFile = fromBlock === undefined ? undefined : { path: path.resolve(configDir, fromBlock), origin: `${at}.${key}` }
    const urlFile = fromUrl === undefined ? undefined : { path: path.resolve(cwd, fromUrl.path), origin: `${fromUrl.parameter} in ${URL_ORIGIN}` }
    if (blockFile !== undefined && urlFile !== undefined && blockFile.path !== urlFile.path) {
      return {
        message: `${at}.${key} is ${blockFile.path} but ${URL_ORIGIN} has ${fromUrl!.parameter}=${urlFile.path}`,
        hint: `say it in one place (remove ${fromUrl!.parameter} from the URL or ${at}.${key}), or make them name the same file (block paths are relative to the config file's directory, URL paths to the working directory)`
      }
    }
    return blockFile ?? urlFile
  }
  const ca = file("ca_file", url.ca)
  if (isTlsProblem(ca)) return ca
  const cert = file("cert_file", url.cert)
  if (isTlsProblem(cert)) return cert
  const key = file("key_file", url.key)
  if (isTlsProblem(key)) return key
  if ((cert === undefined) !== (key === undefined)) {
    const [has, lacks] = cert === undefined ? ["key", "certificate"] : ["certificate", "key"]
    const names = url.cert?.parameter === undefined ? "" : ` (or ${url.cert.parameter} and ${url.key?.parameter ?? "its key"} in the URL)`
    return {
      message: `a client ${has} is given (${(cert ?? key)!.origin}) without its ${lacks}`,
      hint: `set both ${at}.cert_file and ${at}.key_file${names}`
    }
  }
  const mode: TlsMode = block?.mode ?? url.mode?.mode ?? "verify-full"
  const modeOrigin =
    block?.mode !== undefined ? `${at}.mode` : url.mode !== undefined ? `${url.mode.parameter} in ${URL_ORIGIN}` : "the default when TLS settings are given"
  // As libpq: `require` with a CA file checks the chain as verify-ca does.
  const verifyChain = mode === "verify-ca" || mode === "verify-full" || (mode === "require" && ca !== undefined)
  const verifyHost = mode === "verify-full" && block?.accept_invalid_hostnames !== true
  return { mode, modeOrigin, ca, cert, key, passphrase: url.passphrase, verifyChain, verifyHost }
}

/** Whether the settings ask for an encrypted connection (allow and prefer are left to the driver). */
export const encrypts = (settings: TlsSettings | undefined): settings is TlsSettings =>
  settings !== undefined && settings.mode !== "disable" && settings.mode !== "allow" && settings.mode !== "prefer"

/** The contents of a connection's certificate files, read by the source. */
export interface TlsFileContents {
  readonly ca?: Uint8Array | undefined
  readonly cert?: Uint8Array | undefined
  readonly key?: Uint8Array | undefined
}

/** The Node TLS options of encrypting settings, given the files' contents. */
export const nodeTlsOptions = (settings: TlsSettings, files: TlsFileContents): ConnectionOptions => ({
  rejectUnauthorized: settings.verifyChain,
  ...(files.ca === undefined ? {} : { ca: Buffer.from(files.ca) }),
  ...(files.cert === undefined || files.key === undefined
    ? {}
    : { cert: Buffer.from(files.cert), key: Buffer.from(files.key), ...(settings.passphrase === undefined ? {} : { passphrase: settings.passphrase }) }),
  ...(settings.verifyChain && !settings.verifyHost ? { checkServerIdentity: () => undefined } : {})
})

/** What a file is, for messages: `CA certificate file`. */
export const TLS_FILE_ROLES = { ca: "CA certificate file", cert: "client certificate file", key: "client key file" } as const

/** A TLS file that cannot be read, said with its path and the key that named it. */
export const unreadableTlsFile = (file: TlsFile, role: keyof typeof TLS_FILE_ROLES, why: string): TlsProblem => ({
  message: `cannot read the ${TLS_FILE_ROLES[role]} ${file.path} (${file.origin}): ${why}`,
  hint: "check the path (relative paths in the config file start at its directory) and that this user may read it"
})

/** `TLS TLSv1.3, certificate verified, host name checked (CA /etc/rivet/ca.pem); mode verify-full`, for `rivet doctor`. */
export const describeTlsSession = (version: string | undefined, settings: TlsSettings | undefined): string => {
  const mode = settings === undefined ? "no TLS settings" : `mode ${settings.mode}`
  if (version === undefined) return `not encrypted (${mode})`
  if (settings === undefined) return `TLS ${version} (${mode})`
  const ca = settings.ca === undefined ? "Node's default CAs" : `CA ${settings.ca.path}`
  const verified = !settings.verifyChain
    ? "certificate not verified"
    : settings.verifyHost
      ? `certificate verified, host name checked (${ca})`
      : `certificate verified, host name not checked (${ca})`
  return `TLS ${version}, ${verified}; ${mode}${settings.cert === undefined ? "" : ", client certificate"}`
}
