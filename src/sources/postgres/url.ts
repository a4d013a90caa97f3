/**
 * Connection URLs carry the password; nothing Rivet prints may. `maskUrl` gives the display form and
 * `makeScrubber` removes the password from any text (library error messages) as a second line of defence.
 */

const SCHEMES = ["postgres://", "postgresql://"]

/** True when the URL uses a scheme postgres.js understands. */
export const hasPostgresScheme = (url: string): boolean => SCHEMES.some((scheme) => url.toLowerCase().startsWith(scheme))

interface UrlParts {
  readonly scheme: string
  readonly user?: string | undefined
  readonly password?: string | undefined
  readonly rest: string
}

// Hand-split rather than `new URL`: postgres.js accepts multi-host URLs (`h1:5432,h2:5432`) that URL rejects, and
// a password with unencoded `@`, `/` or `?` must still be hidden. The last `@` ends the userinfo: when an `@`
// appears later in the URL this masks too much, never too little.
const splitUrl = (url: string): UrlParts | undefined => {
  const schemeEnd = url.indexOf("://")
  if (schemeEnd < 0) return undefined
  const scheme = url.slice(0, schemeEnd + 3)
  const afterScheme = url.slice(schemeEnd + 3)
  const at = afterScheme.lastIndexOf("@")
  if (at < 0) return { scheme, rest: afterScheme }
  const userinfo = afterScheme.slice(0, at)
  const colon = userinfo.indexOf(":")
  return colon < 0
    ? { scheme, user: userinfo, rest: afterScheme.slice(at + 1) }
    : { scheme, user: userinfo.slice(0, colon), password: userinfo.slice(colon + 1), rest: afterScheme.slice(at + 1) }
}

const maskQueryPassword = (rest: string): string => rest.replace(/([?&]password=)[^&#]*/gi, "$1***")

/** `postgres://app:s3cret@db:5432/shop` → `postgres://app:***@db:5432/shop`. */
export const maskUrl = (url: string): string => {
  const parts = splitUrl(url)
  if (parts === undefined) return "(invalid PostgreSQL URL)"
  const rest = maskQueryPassword(parts.rest)
  if (parts.user === undefined) return parts.scheme + rest
  return parts.password === undefined
    ? `${parts.scheme}${parts.user}@${rest}`
    : `${parts.scheme}${parts.user}:***@${rest}`
}

const safeDecode = (text: string): string => {
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** The secrets of a URL: its password (raw and percent-decoded) and any `password=` query parameter. */
const secretsOf = (url: string): ReadonlyArray<string> => {
  const parts = splitUrl(url)
  const secrets = new Set<string>()
  if (parts?.password) {
    secrets.add(parts.password)
    secrets.add(safeDecode(parts.password))
  }
  for (const match of url.matchAll(/[?&]password=([^&#]*)/gi)) {
    if (match[1]) secrets.add(safeDecode(match[1]))
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
