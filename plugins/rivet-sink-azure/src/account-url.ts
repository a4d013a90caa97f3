/**
 * `account_url` rules: which URLs are accepted, where the account name comes from, and the plain-http guard.
 * Every decision uses WHATWG `URL`, the parser the Azure SDK connects with, so the host checked is the host used.
 */

/** Azure's public blob endpoints (and sovereign clouds): the account is the first label of the host. */
const AZURE_BLOB_HOST = /\.blob\.(core\.windows\.net|core\.chinacloudapi\.cn|core\.usgovcloudapi\.net|storage\.azure\.net)$/

/** Storage account names: 3 to 24 lowercase letters and digits. */
const ACCOUNT_NAME = /^[a-z0-9]{3,24}$/

export const accountNameProblem = (name: string): string | undefined =>
  ACCOUNT_NAME.test(name) ? undefined : `account name '${name}' is not valid: use 3 to 24 lowercase letters and digits`

const isLoopbackIPv4 = (host: string): boolean => {
  const octets = host.split(".")
  return octets.length === 4 && octets[0] === "127" && octets.every((octet) => /^\d{1,3}$/.test(octet))
}

/** localhost, 127.0.0.0/8 or [::1], as WHATWG URL normalises them. */
export const isLoopbackHost = (hostname: string): boolean =>
  hostname === "localhost" || isLoopbackIPv4(hostname) || hostname === "[::1]"

const isIpLiteral = (hostname: string): boolean => hostname.startsWith("[") || /^[\d.]+$/.test(hostname)

/** The URL with any userinfo masked, for messages. */
export const displayUrl = (text: string): string => text.replace(/^([^:/?#]*:\/\/)[^/?#]*@/, "$1***@")

/** Why `account_url` cannot be used, or undefined. Checks shape only, not the plain-http guard. */
export const accountUrlProblem = (text: string): string | undefined => {
  const shown = displayUrl(text)
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return `account_url '${shown}' is not a valid URL: write it like https://myaccount.blob.core.windows.net`
  }
  if (url.protocol !== "https:" && url.protocol !== "http:") {
    return `account_url '${shown}' must use https:// (or http:// for a local emulator), not ${url.protocol}//`
  }
  if (url.username !== "" || url.password !== "") {
    return `account_url '${shown}' must not carry a user name or password: name the credential's environment variable in account_key_env or sas_token_env`
  }
  if (url.search !== "" || text.includes("?")) {
    return "account_url must not carry a query string: a SAS token is a secret, so put it in an environment variable and name that variable in sas_token_env"
  }
  if (url.hash !== "") return `account_url '${shown}' must not carry a #fragment`
  const segments = url.pathname.split("/").filter((segment) => segment !== "")
  if (segments.length > 1 || (segments.length === 1 && AZURE_BLOB_HOST.test(url.hostname))) {
    return `account_url '${shown}' must be the storage account's URL without the container or a folder (e.g. https://myaccount.blob.core.windows.net): put the container in container: and any folder in prefix:`
  }
  return undefined
}

/**
 * The account an `account_url` names: the path segment of an emulator-style URL (`http://127.0.0.1:10000/devstoreaccount1`),
 * else the first label of a host name (`myaccount.blob.core.windows.net`). Undefined for a bare IP or localhost.
 */
export const accountNameFromUrl = (text: string): string | undefined => {
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return undefined
  }
  const segment = url.pathname.split("/").find((part) => part !== "")
  if (segment !== undefined) return segment
  if (url.hostname === "localhost" || isIpLiteral(url.hostname)) return undefined
  return url.hostname.split(".")[0]
}

const CLEARTEXT_RISK =
  "Plain http sends every blob and the request signatures (or a SAS token) in cleartext, so it is accepted only for loopback emulators such as Azurite"

/**
 * The plain-http guard: an `http://` URL must point at a loopback host (Azurite on 127.0.0.1 / localhost / [::1])
 * unless `allow_http: true`. `what` names the setting the URL came from in the message.
 */
export const cleartextProblem = (text: string, allowHttp: boolean, what: string): string | undefined => {
  if (allowHttp) return undefined
  let url: URL
  try {
    url = new URL(text)
  } catch {
    return undefined
  }
  if (url.protocol !== "http:" || isLoopbackHost(url.hostname)) return undefined
  return `${what} uses plain http to the non-loopback host '${url.hostname}'. ${CLEARTEXT_RISK}. Use https://, or set allow_http: true for an emulator on a network you trust`
}
