/**
 * Connection URLs, parsed once. postgres.js splits a URL with two different parsers (its own host split at the
 * first `@` before a `/` or `?`, then WHATWG `URL` for the rest, which ends the URL at `#`), so a password holding
 * `#`, `?`, `/` or a second `@` turned part of itself into the host name — printed in errors and sent to DNS.
 * Here any such URL is refused with the fix (percent-encode), and a valid one becomes explicit connection options
 * (`connectionOptions`), so the driver never parses the user, password, host, port or database itself and the
 * masked URL shown in messages is built from exactly what is dialled.
 */

import type postgres from "postgres"
import { isTlsProblem, resolveTls, type SslOption, sslOption, type TlsInput, type TlsProblem, type TlsSettings, withoutTlsParameters } from "./postgres-tls.js"

const SCHEMES = ["postgres://", "postgresql://"]

/** True when the URL uses a scheme postgres.js understands. */
export const hasPostgresScheme = (url: string): boolean => SCHEMES.some((scheme) => url.toLowerCase().startsWith(scheme))

/** One server of a (possibly multi-host) URL. */
export interface PostgresHost {
  /** Host name or IP address (an IPv6 address without its brackets). */
  readonly host: string
  readonly port: number
}

/** What a `postgres://` URL says, decoded. */
export interface PostgresAddress {
  readonly scheme: string
  readonly hosts: ReadonlyArray<PostgresHost>
  readonly user?: string | undefined
  readonly password?: string | undefined
  readonly database?: string | undefined
  /** The query string without `?` (driver settings such as `sslmode`), exactly as written. */
  readonly query: string
}

/** Why a URL cannot be used; neither text quotes any part of the URL (it may be the password). */
export interface UrlProblem {
  readonly message: string
  readonly hint: string
}

export const DEFAULT_PORT = 5432

const ENCODE_HINT =
  "percent-encode these characters in the user name and password: # → %23, ? → %3F, / → %2F, @ → %40, % → %25, " +
  "e.g. postgres://app:p%23ss%40word@db:5432/shop for the password p#ss@word (encodeURIComponent does it)"

const problem = (message: string, hint: string = ENCODE_HINT): UrlProblem => ({ message, hint })

/** `%` must start a `%XX` escape; decodeURIComponent would throw "URI malformed" on anything else. */
const decodeComponent = (text: string): string | undefined => {
  if (/%(?![0-9A-Fa-f]{2})/.test(text)) return undefined
  try {
    return decodeURIComponent(text)
  } catch {
    // A %XX sequence that is not UTF-8.
    return undefined
  }
}

// Letters, digits, `-`, `.`, `_`, `~`: a DNS name or IPv4 address. Percent-encoded or other characters in a host
// are refused rather than guessed at (postgres.js would pass them to DNS undecoded).
const HOST_NAME = /^[A-Za-z0-9._~-]+$/
const IPV6 = /^\[([0-9A-Fa-f:.]+)\]$/

const parseHost = (text: string): PostgresHost | UrlProblem => {
  const bracketEnd = text.startsWith("[") ? text.indexOf("]") + 1 : 0
  const colon = text.indexOf(":", bracketEnd)
  const hostText = colon < 0 ? text : text.slice(0, colon)
  const portText = colon < 0 ? undefined : text.slice(colon + 1)
  const ipv6 = IPV6.exec(hostText)
  const host = ipv6 ? ipv6[1]! : hostText === "" ? "localhost" : hostText
  if (!ipv6 && !HOST_NAME.test(host)) {
    return problem(
      "the host of the connection URL is not a host name or IP address",
      "write postgres://user:password@host:5432/database, with the password percent-encoded: " + ENCODE_HINT
    )
  }
  if (portText === undefined || portText === "") return { host, port: DEFAULT_PORT }
  const port = /^\d{1,5}$/.test(portText) ? Number(portText) : NaN
  if (!(port >= 1 && port <= 65535)) {
    // Not quoted: with the `@` forgotten, `postgres://user:secret/db` has the password in the port's place.
    return problem(
      "the port of the connection URL is not a number from 1 to 65535",
      "write postgres://user:password@host:5432/database (is the @ between the password and the host missing?)"
    )
  }
  return { host, port }
}

/**
 * Parses a `postgres://` or `postgresql://` URL the one way Rivet and the driver use it, or says why it cannot be
 * used. `user:password@host1:port1,host2:port2/database?query`; the user name, password and database are
 * percent-decoded. Refused: a `#` anywhere, more than one `@` in the user-and-password part, an `@` after the host
 * (a `/` or `?` in the password), a `%` that starts no `%XX` escape, a database name with a `/`.
 */
export const parsePostgresUrl = (url: string): PostgresAddress | UrlProblem => {
  if (!hasPostgresScheme(url)) {
    return problem(
      "the connection URL must start with postgres:// or postgresql://",
      "use a URL such as postgres://user:password@host:5432/database"
    )
  }
  const schemeEnd = url.indexOf("://") + 3
  const scheme = url.slice(0, schemeEnd).toLowerCase()
  if (url.includes("#")) {
    return problem("the connection URL contains a '#', which ends a URL there (the rest would be dropped or misread)")
  }
  const rest = url.slice(schemeEnd)
  const authorityEnd = rest.search(/[/?]/)
  const authority = authorityEnd < 0 ? rest : rest.slice(0, authorityEnd)
  const tail = authorityEnd < 0 ? "" : rest.slice(authorityEnd)
  const at = authority.indexOf("@")
  if (at >= 0 && authority.indexOf("@", at + 1) >= 0) {
    return problem("the user name or password in the connection URL contains an '@' that is not percent-encoded")
  }
  if (tail.includes("@")) {
    return problem(
      "the connection URL has an '@' after its host part: the password (or user name) contains a '/' or '?' that is not percent-encoded, or the database name or a parameter an '@'"
    )
  }
  let user: string | undefined
  let password: string | undefined
  if (at >= 0) {
    const userinfo = authority.slice(0, at)
    const colon = userinfo.indexOf(":")
    user = decodeComponent(colon < 0 ? userinfo : userinfo.slice(0, colon))
    password = colon < 0 ? "" : decodeComponent(userinfo.slice(colon + 1))
    if (user === undefined || password === undefined) {
      return problem("the user name or password in the connection URL has a '%' that does not start a %XX escape")
    }
    if (colon < 0) password = undefined
  }
  const hosts: Array<PostgresHost> = []
  for (const text of authority.slice(at + 1).split(",")) {
    const parsed = parseHost(text)
    if ("message" in parsed) return parsed
    hosts.push(parsed)
  }
  const queryStart = tail.indexOf("?")
  const pathText = queryStart < 0 ? tail : tail.slice(0, queryStart)
  const query = queryStart < 0 ? "" : tail.slice(queryStart + 1)
  const databaseText = pathText.replace(/^\//, "")
  const database = decodeComponent(databaseText)
  if (database === undefined || databaseText.includes("/")) {
    return problem(
      "the database name in the connection URL is not valid (a '/' in it, or a '%' that starts no %XX escape)",
      "write postgres://user:password@host:5432/database with a single database name; percent-encode / as %2F and % as %25"
    )
  }
  return {
    scheme,
    hosts,
    user: user === "" ? undefined : user,
    password,
    database: database === "" ? undefined : database,
    query
  }
}

/** True when `parsePostgresUrl` refused the URL. */
export const isUrlProblem = (parsed: PostgresAddress | UrlProblem): parsed is UrlProblem => "message" in parsed

/** Why `url` cannot be used, or undefined. */
export const urlProblem = (url: string): UrlProblem | undefined => {
  const parsed = parsePostgresUrl(url)
  return isUrlProblem(parsed) ? parsed : undefined
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** Query parameters that hold a secret: libpq's `password` and `sslpassword` (the client key's passphrase). */
const SECRET_PARAMETERS = new Set(["password", "sslpassword"])

/** The name of a `name=value` query parameter as the driver reads it (URLSearchParams: `+` is a space, `%XX` decoded). */
const parameterName = (parameter: string): string => {
  const equals = parameter.indexOf("=")
  return safeDecode((equals < 0 ? parameter : parameter.slice(0, equals)).replace(/\+/g, " ")).toLowerCase()
}

/** The raw values of the secret parameters of a query string, in any position and however their names are encoded. */
const secretParameterValues = (query: string): ReadonlyArray<string> =>
  query
    .split("&")
    .filter((parameter) => SECRET_PARAMETERS.has(parameterName(parameter)) && parameter.includes("="))
    .map((parameter) => parameter.slice(parameter.indexOf("=") + 1))

const maskQuery = (query: string): string =>
  query
    .split("&")
    .map((parameter) =>
      SECRET_PARAMETERS.has(parameterName(parameter)) && parameter.includes("=")
        ? `${parameter.slice(0, parameter.indexOf("="))}=***`
        : parameter
    )
    .join("&")

const hostText = ({ host, port }: PostgresHost): string => `${host.includes(":") ? `[${host}]` : host}:${port}`

/** The URL as dialled, its password masked: `postgres://app:***@db:5432/shop`. */
export const displayAddress = (address: PostgresAddress): string => {
  const user = address.user === undefined ? "" : encodeURIComponent(address.user)
  const userinfo = address.user === undefined ? "" : address.password === undefined ? `${user}@` : `${user}:***@`
  const database = address.database === undefined ? "" : `/${encodeURIComponent(address.database)}`
  const query = address.query === "" ? "" : `${database === "" ? "/" : ""}?${maskQuery(address.query)}`
  return `${address.scheme}${userinfo}${address.hosts.map(hostText).join(",")}${database}${query}`
}

/** `postgres://app:s3cret@db:5432/shop` → `postgres://app:***@db:5432/shop`; a URL that cannot be used says so. */
export const maskUrl = (url: string): string => {
  const parsed = parsePostgresUrl(url)
  return isUrlProblem(parsed) ? "(invalid PostgreSQL URL)" : displayAddress(parsed)
}

/** What postgres.js connects with: nothing of it is parsed from a URL by the driver. */
export interface ConnectionTarget {
  /**
   * A URL carrying only the query string (driver settings such as `search_path`, which postgres.js reads from it),
   * without the TLS parameters: Rivet reads those itself (postgres-tls.ts) and passes `options.ssl`.
   */
  readonly settingsUrl: string
  /** Spread into the postgres.js options, where they take precedence over anything in `settingsUrl`. */
  readonly options: Pick<postgres.Options<Record<string, never>>, "host" | "port" | "user" | "pass" | "database" | "ssl">
  /** The TLS settings the connection uses (undefined: none given, no TLS), for messages and `rivet doctor`. */
  readonly tls?: TlsSettings | undefined
}

/** The connection options of an address, with the postgres.js `ssl` option the TLS settings gave (if any). */
export const connectionTarget = (address: PostgresAddress, tls?: { readonly settings: TlsSettings; readonly ssl: SslOption }): ConnectionTarget => {
  const query = withoutTlsParameters(address.query)
  return {
    settingsUrl: `postgres://localhost/${query === "" ? "" : `?${query}`}`,
    options: {
      // One entry per server: postgres.js takes arrays here (as it builds them from a multi-host URL), though its
      // types declare a single string and number. Passing a joined string would make it split `::1` at its colons.
      host: address.hosts.map((entry) => entry.host) as unknown as string,
      port: address.hosts.map((entry) => entry.port) as unknown as number,
      ...(address.user === undefined ? {} : { user: address.user }),
      ...(address.password === undefined || address.password === "" ? {} : { pass: address.password }),
      ...(address.database === undefined ? {} : { database: address.database }),
      ...(tls === undefined ? {} : { ssl: tls.ssl as boolean | object })
    },
    tls: tls?.settings
  }
}

/**
 * The connection target of an address with its TLS settings merged from `tls` (the config's block) and the URL's
 * libpq parameters, the certificate files read; or why not (the two disagree, a file cannot be read).
 */
export const resolveConnection = (
  address: PostgresAddress,
  tls: Omit<TlsInput, "query"> = {}
): ConnectionTarget | TlsProblem => {
  const settings = resolveTls({ ...tls, query: address.query })
  if (settings === undefined) return connectionTarget(address)
  if (isTlsProblem(settings)) return settings
  const ssl = sslOption(settings)
  return isTlsProblem(ssl) ? ssl : connectionTarget(address, { settings, ssl })
}

/**
 * The secrets of a URL, whether it parses or not: the text between the first `:` after the scheme and the last
 * `@` (raw and percent-decoded, which covers any way a driver could have split it), the parsed password, and the
 * value of every `password=` and `sslpassword=` query parameter (raw and decoded), wherever it stands in the query.
 */
const secretsOf = (url: string): ReadonlyArray<string> => {
  const secrets = new Set<string>()
  const afterScheme = url.includes("://") ? url.slice(url.indexOf("://") + 3) : url
  const at = afterScheme.lastIndexOf("@")
  const colon = afterScheme.indexOf(":")
  if (at > 0 && colon >= 0 && colon < at) {
    const raw = afterScheme.slice(colon + 1, at)
    secrets.add(raw)
    secrets.add(safeDecode(raw))
  }
  const parsed = parsePostgresUrl(url)
  if (!isUrlProblem(parsed) && parsed.password) secrets.add(parsed.password)
  const queryStart = url.indexOf("?")
  const query = queryStart < 0 ? "" : url.slice(queryStart + 1).split("#")[0]!
  for (const raw of secretParameterValues(query)) {
    secrets.add(raw)
    secrets.add(safeDecode(raw.replace(/\+/g, " ")))
  }
  // Very short secrets would mangle ordinary words; such a password is no secret worth hiding anyway.
  return [...secrets].filter((secret) => secret.length >= 3)
}

/** A function replacing the URL and every secret in it by their masked forms in any text. */
export const makeScrubber = (url: string): ((text: string) => string) => {
  const masked = maskUrl(url)
  const secrets = secretsOf(url)
  return (text) => {
    let out = text.split(url).join(masked)
    for (const secret of secrets) out = out.split(secret).join("***")
    return out
  }
}
