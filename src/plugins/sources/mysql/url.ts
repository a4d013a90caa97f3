/**
 * `mysql://user:password@host:3306/database?ssl-mode=…` URLs, parsed once into explicit connection options, so the
 * driver never parses the secret itself and the masked URL in messages is built from exactly what is dialled.
 */

/** What a `mysql://` URL says, decoded. */
export interface MysqlAddress {
  readonly host: string
  readonly port: number
  readonly user: string
  readonly password?: string | undefined
  readonly database: string
  /** The URL's `ssl-mode`, when it has one (without: no TLS unless the `tls:` block asks for it). */
  readonly sslMode?: SslMode | undefined
  /** The URL's `ssl-ca`, `ssl-cert` and `ssl-key`: certificate files, relative to the working directory. */
  readonly sslCa?: string | undefined
  readonly sslCert?: string | undefined
  readonly sslKey?: string | undefined
}

/** The `ssl-mode` values of the MySQL clients. */
export type SslMode = "DISABLED" | "PREFERRED" | "REQUIRED" | "VERIFY_CA" | "VERIFY_IDENTITY"

const SSL_MODES: ReadonlyArray<SslMode> = ["DISABLED", "PREFERRED", "REQUIRED", "VERIFY_CA", "VERIFY_IDENTITY"]

/** Why a URL cannot be used; neither text quotes any part of the URL (it may hold the password). */
export interface UrlProblem {
  readonly message: string
  readonly hint: string
}

export const DEFAULT_PORT = 3306

/** The URL parameters naming certificate files (the mysql client's option names). */
const FILE_PARAMETERS: Readonly<Record<string, "sslCa" | "sslCert" | "sslKey" | undefined>> = {
  "ssl-ca": "sslCa",
  "ssl-cert": "sslCert",
  "ssl-key": "sslKey"
}

const PARAMETERS = "?ssl-mode=DISABLED|PREFERRED|REQUIRED|VERIFY_CA|VERIFY_IDENTITY, ssl-ca, ssl-cert and ssl-key (file paths)"

const EXAMPLE = "mysql://user:password@host:3306/database"

const ENCODE_HINT =
  "percent-encode these characters in the user name and password: # → %23, ? → %3F, / → %2F, @ → %40, % → %25 (encodeURIComponent does it)"

const problem = (message: string, hint = ENCODE_HINT): UrlProblem => ({ message, hint })

const decode = (text: string): string | undefined => {
  try {
    return decodeURIComponent(text)
  } catch {
    return undefined
  }
}

export const isUrlProblem = (value: MysqlAddress | UrlProblem): value is UrlProblem => "hint" in value

/** Parses a connection URL, or says (without quoting it) why it cannot be used. */
export const parseMysqlUrl = (url: string): MysqlAddress | UrlProblem => {
  const scheme = /^(mysql|mariadb):\/\//i.exec(url)
  if (scheme === null) {
    return problem("the connection URL must start with mysql:// (or mariadb://)", `write it as ${EXAMPLE}`)
  }
  const rest = url.slice(scheme[0].length)
  const pathAt = rest.search(/[/?#]/)
  const authority = pathAt < 0 ? rest : rest.slice(0, pathAt)
  const tail = pathAt < 0 ? "" : rest.slice(pathAt)
  if (tail.startsWith("#")) return problem("the connection URL has a `#` outside the password")
  if (tail.split("?")[0]!.includes("@")) return problem("the user name or password holds an unencoded `/`")
  const at = authority.lastIndexOf("@")
  const credentials = at < 0 ? "" : authority.slice(0, at)
  const hostPort = at < 0 ? authority : authority.slice(at + 1)
  if (credentials.includes("@")) return problem("the user name or password holds an unencoded `@`")
  const colon = credentials.indexOf(":")
  const user = decode(colon < 0 ? credentials : credentials.slice(0, colon))
  const password = colon < 0 ? undefined : decode(credentials.slice(colon + 1))
  if (user === undefined || (colon >= 0 && password === undefined)) {
    return problem("the user name or password holds a `%` that is not a valid %XX escape")
  }
  const hostMatch = /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~-]*)(?::(\d{1,5}))?$/.exec(hostPort)
  if (hostMatch === null) {
    return problem("the host of the connection URL is not a host name, IP address or host:port")
  }
  const host = hostMatch[1]!.replace(/^\[|\]$/g, "") || "localhost"
  const port = hostMatch[2] === undefined ? DEFAULT_PORT : Number(hostMatch[2])
  if (port < 1 || port > 65535) return problem("the port of the connection URL must be from 1 to 65535", `write it as ${EXAMPLE}`)
  const queryAt = tail.indexOf("?")
  const pathPart = queryAt < 0 ? tail : tail.slice(0, queryAt)
  const database = decode(pathPart.replace(/^\//, ""))
  if (database === undefined || database === "" || database.includes("/")) {
    return problem("the connection URL must name the database after the host", `write it as ${EXAMPLE}`)
  }
  let sslMode: SslMode | undefined
  const files: Partial<Record<"sslCa" | "sslCert" | "sslKey", string>> = {}
  const params = new URLSearchParams(queryAt < 0 ? "" : tail.slice(queryAt + 1))
  for (const [key, value] of params) {
    const name = key.toLowerCase()
    const file = FILE_PARAMETERS[name]
    if (file !== undefined) {
      if (value === "") return problem(`${name} in the connection URL names no file`, `e.g. ${EXAMPLE}?ssl-mode=VERIFY_IDENTITY&ssl-ca=/etc/ssl/db-ca.pem`)
      files[file] = value
      continue
    }
    if (name !== "ssl-mode" && name !== "sslmode") {
      return problem(`the connection URL has an unknown parameter \`${key}\``, `the URL parameters are ${PARAMETERS}`)
    }
    const mode = SSL_MODES.find((candidate) => candidate === value.toUpperCase())
    if (mode === undefined) {
      return problem("ssl-mode must be DISABLED, PREFERRED, REQUIRED, VERIFY_CA or VERIFY_IDENTITY", `e.g. ${EXAMPLE}?ssl-mode=REQUIRED`)
    }
    sslMode = mode
  }
  return { host, port, user, password, database, sslMode, ...files }
}

/** A problem with the URL as text for a schema filter, or undefined. */
export const urlProblem = (url: string): UrlProblem | undefined => {
  const parsed = parseMysqlUrl(url)
  return isUrlProblem(parsed) ? parsed : undefined
}

const hostText = (host: string): string => (host.includes(":") ? `[${host}]` : host)

/** The URL with its password masked: `mysql://app:***@db:3306/shop`. */
export const displayAddress = (address: MysqlAddress): string => {
  const user = address.user === "" ? "" : `${encodeURIComponent(address.user)}${address.password === undefined ? "" : ":***"}@`
  return `mysql://${user}${hostText(address.host)}:${address.port}/${encodeURIComponent(address.database)}`
}

/** `host/database`, the short form in `rivet doctor`'s `Source MySQL(db.internal/shop)`. */
export const shortAddress = (address: MysqlAddress): string => `${hostText(address.host)}/${address.database}`

/** The password as written in the URL (still percent-encoded), or undefined. */
const rawPasswordOf = (url: string): string | undefined => {
  const rest = url.replace(/^[A-Za-z]+:\/\//, "")
  const authorityEnd = rest.search(/[/?#]/)
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd)
  const at = authority.lastIndexOf("@")
  const colon = authority.indexOf(":")
  return at < 0 || colon < 0 || colon > at ? undefined : authority.slice(colon + 1, at)
}

/** Removes the password (decoded and as written, percent-encoded) and the URL from any text a library produced. */
export const makeScrubber = (address: MysqlAddress, url: string) => {
  // The passwords first: a URL quoted in the text then keeps its host and database, its password masked.
  const secrets = [address.password, rawPasswordOf(url), url]
    .filter((secret): secret is string => secret !== undefined && secret.length >= 3)
  return (text: string): string => secrets.reduce((scrubbed, secret) => scrubbed.split(secret).join("***"), text)
}
