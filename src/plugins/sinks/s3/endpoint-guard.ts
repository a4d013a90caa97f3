/**
 * The custom-endpoint guard. A committed `endpoint:` silently redirects every upload (and every signed request)
 * to that host, so only loopback emulators are accepted unless `allow_anonymous: true` waives the check.
 *
 * The host is parsed by hand, strictly, and must also agree with what WHATWG `URL` (which the AWS SDK uses to
 * connect) makes of the same text: a URL the two parsers read differently (`http://evil.com\@localhost`,
 * `http://127.0.0.010`) is rejected rather than trusted. Shorthand IPv4 forms that `URL` would rewrite to
 * 127.0.0.1 (`http://2130706433`, `http://127.1`, `http://0x7f.0.0.1`) are rejected: only a literal dotted quad
 * counts. IPv4-mapped IPv6 (`[::ffff:127.0.0.1]`) is rejected too: whether it reaches loopback depends on the
 * host's dual-stack setup, and no emulator needs it.
 */

/** The verdict of {@link checkEndpoint}; `reason` is the full user-facing message. */
export type EndpointCheck = { readonly ok: true } | { readonly ok: false; readonly reason: string }

const RISK =
  "A custom endpoint silently redirects every upload there — committing one is a data-exfiltration / " +
  "cleartext-credential risk."
const WHAT_TO_DO =
  "Drop `endpoint:` to use AWS S3, or point it at a loopback emulator such as http://localhost:9000 (MinIO)."

/** The endpoint as it may be shown in a message: any userinfo (`user:password@`) is masked. */
export const displayEndpoint = (endpoint: string): string => endpoint.replace(/^([^:/?#]*:\/\/)[^/?#]*@/, "$1***@")

/** Why an endpoint is not a usable http(s) URL, or undefined when it is one. Independent of the guard. */
export const endpointUrlProblem = (endpoint: string): string | undefined => {
  const shown = displayEndpoint(endpoint)
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(endpoint)) {
    return `endpoint '${shown}' has no scheme: write it as a URL, e.g. http://localhost:9000`
  }
  let url: URL
  try {
    url = new URL(endpoint)
  } catch {
    return `endpoint '${shown}' is not a valid URL: write it like http://localhost:9000`
  }
  if (url.protocol !== "http:" && url.protocol !== "https:") {
    return `endpoint '${shown}' must use http:// or https://, not ${url.protocol}//`
  }
  return undefined
}

/** The host of `scheme://[userinfo@]host[:port][/path]`, lowercased, brackets kept; undefined if malformed. */
const parseHost = (endpoint: string): string | undefined => {
  const schemeEnd = endpoint.indexOf("://")
  if (schemeEnd <= 0) return undefined
  const rest = endpoint.slice(schemeEnd + 3)
  const authorityEnd = rest.search(/[/?#]/)
  const authority = authorityEnd === -1 ? rest : rest.slice(0, authorityEnd)
  // A backslash is a path separator for WHATWG URL but not for a naive parser: never guess.
  if (authority.includes("\\")) return undefined
  const hostPort = authority.slice(authority.lastIndexOf("@") + 1).toLowerCase()
  if (hostPort.startsWith("[")) {
    const close = hostPort.indexOf("]")
    if (close === -1) return undefined
    const after = hostPort.slice(close + 1)
    if (after !== "" && !/^:\d*$/.test(after)) return undefined
    return hostPort.slice(0, close + 1)
  }
  const colon = hostPort.indexOf(":")
  const host = colon === -1 ? hostPort : hostPort.slice(0, colon)
  if (colon !== -1 && !/^\d*$/.test(hostPort.slice(colon + 1))) return undefined
  return host
}

const isLoopbackIPv4Literal = (host: string): boolean => {
  const octets = host.split(".")
  if (octets.length !== 4) return false
  // Canonical decimal only: a leading zero means octal to some parsers.
  if (!octets.every((octet) => /^(0|[1-9]\d{0,2})$/.test(octet) && Number(octet) <= 255)) return false
  return octets[0] === "127"
}

const isLoopbackHost = (host: string): boolean =>
  host === "localhost" || isLoopbackIPv4Literal(host) || host === "[::1]" || host === "[0:0:0:0:0:0:0:1]"

/** The hostname WHATWG URL (hence the AWS SDK) would connect to, or undefined if it cannot parse the text. */
const urlHostname = (endpoint: string): string | undefined => {
  try {
    return new URL(endpoint).hostname.toLowerCase()
  } catch {
    return undefined
  }
}

/**
 * Accepts `endpoint` only when it is an http(s) URL whose host is loopback: `localhost`, a dotted-quad IPv4
 * literal in 127.0.0.0/8, or `[::1]` (userinfo and port ignored, case-insensitive). `allowAnonymous` waives the
 * guard. Pure: no DNS, no network.
 */
export const checkEndpoint = (endpoint: string, allowAnonymous: boolean): EndpointCheck => {
  if (allowAnonymous) return { ok: true }
  const shown = displayEndpoint(endpoint)
  const reject = (why: string): EndpointCheck => ({
    ok: false,
    reason: `endpoint '${shown}' ${why}. ${RISK} ${WHAT_TO_DO}`
  })
  const urlProblem = endpointUrlProblem(endpoint)
  if (urlProblem !== undefined) return reject("is not an http:// or https:// URL with a loopback host")
  const host = parseHost(endpoint)
  if (host === undefined || host === "") return reject("has no host Rivet can verify as loopback")
  if (!isLoopbackHost(host)) return reject(`points at a non-loopback host '${host}'`)
  const connectsTo = urlHostname(endpoint)
  const agrees = connectsTo === host || (host.startsWith("[") && connectsTo === "[::1]")
  if (!agrees) return reject(`is ambiguous: it reads as host '${host}' but would connect to '${connectsTo ?? "?"}'`)
  return { ok: true }
}
