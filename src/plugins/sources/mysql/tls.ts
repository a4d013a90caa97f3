/**
 * TLS of the mysql source: the `tls:` block and the URL's `ssl-mode`, `ssl-ca`, `ssl-cert`, `ssl-key` merged into
 * the settings the postgres source uses too (src/core/source/tls.ts), the certificate files read through the
 * platform FileSystem, and mysql2's `ssl` option built from them.
 */

import * as FileSystem from "@effect/platform/FileSystem"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as Effect from "effect/Effect"
import type mysql from "mysql2"
import * as tls from "node:tls"
import { tlsFailure, type TlsServer } from "../../../core/source/tls-failure.js"
import {
  encrypts,
  mergeTls,
  nodeTlsOptions,
  type TLS_FILE_ROLES,
  type TlsBlock,
  type TlsFile,
  type TlsMode,
  type TlsProblem,
  type TlsSettings,
  type UrlTls,
  unreadableTlsFile
} from "../../../core/source/tls.js"
import type { MysqlAddress, SslMode } from "./url.js"

const MODES: Readonly<Record<SslMode, TlsMode>> = {
  DISABLED: "disable",
  PREFERRED: "prefer",
  REQUIRED: "require",
  VERIFY_CA: "verify-ca",
  VERIFY_IDENTITY: "verify-full"
}

const urlTls = (address: MysqlAddress): UrlTls => {
  const file = (parameter: string, value: string | undefined) => (value === undefined ? undefined : { parameter, path: value })
  return {
    mode: address.sslMode === undefined ? undefined : { parameter: "ssl-mode", written: address.sslMode, mode: MODES[address.sslMode] },
    ca: file("ssl-ca", address.sslCa),
    cert: file("ssl-cert", address.sslCert),
    key: file("ssl-key", address.sslKey)
  }
}

export interface MysqlTlsInput {
  readonly block?: TlsBlock | undefined
  /** Where the block's relative paths start: the config file's directory. */
  readonly configDir: string
}

/** The connection's TLS settings (undefined: none given), or why the block and the URL cannot be used together. */
export const resolveMysqlTls = (address: MysqlAddress, input: MysqlTlsInput): TlsSettings | TlsProblem | undefined =>
  mergeTls({ url: urlTls(address), block: input.block, blockPath: "source.tls", configDir: input.configDir })

/** The TLS a session is opened with: the settings and mysql2's option (undefined: no TLS). */
export interface MysqlTls {
  readonly settings: TlsSettings
  readonly ssl?: mysql.SslOptions | undefined
}

const readFile = (file: TlsFile | undefined, role: keyof typeof TLS_FILE_ROLES) =>
  file === undefined
    ? Effect.succeed(undefined)
    : Effect.flatMap(FileSystem.FileSystem, (fs) => fs.readFile(file.path)).pipe(
        Effect.mapError((error) =>
          unreadableTlsFile(file, role, error._tag === "SystemError" ? `${error.reason === "NotFound" ? "no such file" : error.reason === "PermissionDenied" ? "permission denied" : error.message}` : error.message)
        )
      )

/**
 * mysql2's `ssl` option of the settings, the certificate files read. The host name is not left to mysql2 (which
 * checks an IP address against `localhost`): `verifyServerName` checks it once the handshake is done.
 */
export const mysqlTls = (settings: TlsSettings): Effect.Effect<MysqlTls, TlsProblem> =>
  Effect.gen(function* () {
    if (!encrypts(settings)) return { settings }
    const ca = yield* readFile(settings.ca, "ca")
    const withClient = settings.cert !== undefined && settings.key !== undefined
    const cert = withClient ? yield* readFile(settings.cert, "cert") : undefined
    const key = withClient ? yield* readFile(settings.key, "key") : undefined
    const { checkServerIdentity: _, ...options } = nodeTlsOptions(settings, { ca, cert, key })
    const ssl: mysql.SslOptions = {
      ...(options.ca === undefined ? {} : { ca: options.ca as Buffer }),
      ...(options.cert === undefined ? {} : { cert: options.cert as Buffer, key: options.key as Buffer }),
      rejectUnauthorized: options.rejectUnauthorized ?? true,
      verifyIdentity: false
    }
    return { settings, ssl }
  }).pipe(Effect.provide(NodeFileSystem.layer))

/**
 * Under verify-full, whether the certificate the server showed names the host dialled (a name or an IP address);
 * a Node error with the code `ERR_TLS_CERT_ALTNAME_INVALID` when it does not.
 */
export const serverNameProblem = (socket: unknown, host: string, settings: TlsSettings | undefined): Error | undefined => {
  if (settings === undefined || !settings.verifyHost || !(socket instanceof tls.TLSSocket)) return undefined
  return tls.checkServerIdentity(host, socket.getPeerCertificate())
}

const MYSQL: TlsServer = {
  name: "MySQL",
  caParameter: "ssl-ca",
  certificateSetting: "ssl_cert on the server",
  noTlsHint:
    "the server does not accept TLS (no ssl_cert / ssl_key in its configuration): configure TLS there, or set the mode to disable if an unencrypted connection is acceptable",
  noTlsCodes: ["HANDSHAKE_NO_SSL_SUPPORT"]
}

// mysql2 replaces the code of a failed handshake's Node error with HANDSHAKE_SSL_ERROR; OpenSSL's text says which.
const NODE_CODES: ReadonlyArray<readonly [RegExp, string]> = [
  [/self[- ]signed certificate in certificate chain/i, "SELF_SIGNED_CERT_IN_CHAIN"],
  [/self[- ]signed certificate/i, "DEPTH_ZERO_SELF_SIGNED_CERT"],
  [/unable to verify the first certificate/i, "UNABLE_TO_VERIFY_LEAF_SIGNATURE"],
  [/unable to get local issuer certificate/i, "UNABLE_TO_GET_ISSUER_CERT_LOCALLY"],
  [/certificate has expired/i, "CERT_HAS_EXPIRED"],
  [/certificate is not yet valid/i, "CERT_NOT_YET_VALID"]
]

const withNodeCode = (cause: unknown): unknown => {
  if (!(cause instanceof Error) || (cause as { code?: unknown }).code !== "HANDSHAKE_SSL_ERROR") return cause
  const found = NODE_CODES.find(([pattern]) => pattern.test(cause.message))
  return found === undefined ? cause : Object.assign(new Error(cause.message), { code: found[1] })
}

/** A TLS failure of a MySQL connection, naming the CA file; undefined when `cause` is none. */
export const mysqlTlsFailure = (cause: unknown, settings: TlsSettings | undefined, where: string): TlsProblem | undefined =>
  tlsFailure(withNodeCode(cause), settings, where, MYSQL)
