/**
 * A TLS failure of a database connection said so the user can act on it: an unknown CA, a host name the certificate
 * does not list, an expired certificate, a server that does not speak TLS — naming the CA file the chain was checked
 * against. Shared by the sources (and the PostgreSQL state store); each names its server and its own spelling.
 */

import type { TlsProblem, TlsSettings } from "./tls.js"

/** How a server is named in messages and where its TLS is configured. */
export interface TlsServer {
  /** `PostgreSQL`, `MySQL` */
  readonly name: string
  /** The URL parameter naming a CA file (`sslrootcert`, `ssl-ca`). */
  readonly caParameter: string
  /** Where the server's certificate is set (`ssl_cert_file on the server`). */
  readonly certificateSetting: string
  /** What to check when the server does not start TLS. */
  readonly noTlsHint: string
  /** Driver error codes meaning the server does not offer TLS. */
  readonly noTlsCodes?: ReadonlyArray<string> | undefined
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
 * A TLS failure of a connection, or undefined when `cause` is no TLS failure. `where` names the server (the masked
 * URL). Never retryable: the same certificate fails again.
 */
export const tlsFailure = (
  cause: unknown,
  settings: TlsSettings | undefined,
  where: string,
  server: TlsServer
): TlsProblem | undefined => {
  if (settings === undefined || settings.mode === "disable") return undefined
  const code = codeOf(cause)
  const text = messageOf(cause)
  const at = `the ${server.name} server at ${where}`
  if (code !== undefined && UNKNOWN_CA.has(code)) {
    return {
      message: `TLS: the certificate of ${at} is not signed by a CA trusted here, ${caText(settings)} (${code}: ${text})`,
      hint:
        settings.ca === undefined
          ? `set source.tls.ca_file (or ${server.caParameter} in the URL) to the CA certificate that signed the server's certificate`
          : "point the CA file at the certificate of the CA that signed the server's certificate (the whole chain up to the root, in PEM)"
    }
  }
  if (code === "ERR_TLS_CERT_ALTNAME_INVALID") {
    return {
      message: `TLS: the certificate of ${at} is not valid for the host name dialled (${text}); mode ${settings.mode} from ${settings.modeOrigin}`,
      hint: "connect with a host name the certificate lists (its subjectAltName), or set source.tls.mode: verify-ca (or accept_invalid_hostnames: true) to check only the CA"
    }
  }
  if (code === "CERT_HAS_EXPIRED" || code === "CERT_NOT_YET_VALID") {
    return {
      message: `TLS: the certificate of ${at} ${code === "CERT_HAS_EXPIRED" ? "has expired" : "is not valid yet"} (${code}), checked against ${caText(settings)}`,
      hint: `renew the server's certificate (${server.certificateSetting}), or check this machine's clock`
    }
  }
  const noTls = code !== undefined && (server.noTlsCodes ?? []).includes(code)
  if (noTls || /before secure TLS connection was established/i.test(text) || code === "EPROTO") {
    return {
      message: `TLS: ${at} ${noTls ? "does not offer TLS" : "closed the connection instead of starting TLS"} (mode ${settings.mode} from ${settings.modeOrigin}): ${text}`,
      hint: server.noTlsHint
    }
  }
  if (code !== undefined && (code.startsWith("ERR_TLS") || code.startsWith("ERR_SSL") || code.startsWith("CERT_"))) {
    return {
      message: `TLS: connecting to ${at} failed (${code}: ${text}), checked against ${caText(settings)}`,
      hint: "check the certificate files and the server's TLS settings"
    }
  }
  return undefined
}
