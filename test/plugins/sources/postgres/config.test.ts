import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { decodeBlock } from "../../../../src/config/issues.js"
import postgresSource from "../../../../src/plugins/sources/postgres/index.js"
import { connectionTarget, isUrlProblem, makeScrubber, maskUrl, parsePostgresUrl } from "../../../../src/core/source/postgres-url.js"

const decode = (input: unknown) =>
  Schema.decodeUnknownEither(postgresSource.config, { onExcessProperty: "error" })(input).pipe(
    Either.mapLeft((error) => ParseResult.ArrayFormatter.formatErrorSync(error).map((issue) => issue.message).join("; "))
  )

describe("postgres source config", () => {
  it("decodes a url with defaults, keeping the url redacted", () => {
    const config = Either.getOrThrow(decode({ url: "postgres://app:pw@db/shop" }))
    expect(Redacted.value(config.url!)).toBe("postgres://app:pw@db/shop")
    expect(String(config.url)).not.toContain("pw")
    expect(config).toMatchObject({ schema: "public", statement_timeout_s: 300, lock_timeout_s: 30, application_name: "rivet" })
  })

  it("accepts url_env and embedded", () => {
    expect(Either.isRight(decode({ url_env: "DATABASE_URL", statement_timeout_s: 0 }))).toBe(true)
    expect(Either.getOrThrow(decode({ embedded: { data_dir: "demo", port: 5544 } })).embedded).toEqual({
      data_dir: "demo",
      port: 5544
    })
  })

  it("requires exactly one way to connect: url, url_env, url_file, host (with user and database) or embedded", () => {
    expect(decode({})).toEqual(Either.left("set one of `url`, `url_env`, `url_file`, `host`, `embedded` to say which database to read"))
    expect(decode({ url: "postgres://h/db", url_env: "X" })).toEqual(
      Either.left("set only one way to connect (found `url` and `url_env`): a URL, or host/user/database with their password")
    )
    expect(Either.getOrThrow(decode({ host: "db", port: 6432, user: "app", database: "shop", password_file: "pw" }))).toMatchObject({ host: "db", port: 6432 })
    expect(decode({ host: "db", user: "app" })).toEqual(Either.left("a connection given by its parts needs `database` too (or use `url` / `url_env`)"))
  })

  it("takes a tls block (mode, files, accept_invalid_hostnames), not with embedded", () => {
    const tls = { mode: "verify-ca", ca_file: "ca.pem", cert_file: "c.pem", key_file: "k.pem", accept_invalid_hostnames: true }
    expect(Either.getOrThrow(decode({ url_env: "X", tls })).tls).toEqual(tls)
    expect(Either.isLeft(decode({ url_env: "X", tls: { mode: "prefer" } }))).toBe(true)
    expect(Either.isLeft(decode({ url_env: "X", tls: { ca_file: "" } }))).toBe(true)
    expect(decode({ embedded: {}, tls: { mode: "require" } })).toEqual(
      Either.left(
        "`tls` does not apply to the embedded demo database (it listens on this machine without TLS): remove it, or connect with `url` / `url_env`"
      )
    )
  })

  it("rejects unknown keys and bad values", () => {
    expect(Either.isLeft(decode({ url_env: "X", bogus: 1 }))).toBe(true)
    expect(Either.isLeft(decode({ url_env: "X", statement_timeout_s: -1 }))).toBe(true)
    expect(Either.isLeft(decode({ embedded: { port: 70000 } }))).toBe(true)
  })

  it("refuses a URL in url_env or a non-string url without echoing the value (as config loading reports it)", () => {
    const messages = (input: unknown) =>
      Either.match(decodeBlock(postgresSource.config, input, "source"), {
        onLeft: (errors) => errors.map((error) => `${error.path}: ${error.message}`),
        onRight: () => []
      })
    const secret = "s3cret-canary"
    expect(messages({ url_env: `postgres://app:${secret}@db/shop` })).toEqual([
      expect.stringMatching(/^source\.url_env: url_env must be the NAME of an environment variable holding the connection URL/)
    ])
    expect(messages({ url_env: "my-url" })).toEqual([
      "source.url_env: url_env must be the name of an environment variable (letters, digits and _), e.g. DATABASE_URL"
    ])
    expect(messages({ url: [`postgres://app:${secret}@db/shop`] })).toEqual([
      "source.url: expected a string: the connection URL (value not shown)"
    ])
    expect(messages({ url_env: `postgres://app:${secret}@db/shop` }).join("")).not.toContain(secret)
  })
})

describe("connection URLs", () => {
  const parsed = (url: string) => {
    const result = parsePostgresUrl(url)
    if (isUrlProblem(result)) throw new Error(`refused: ${result.message}`)
    return result
  }

  it("parses user, password, hosts, ports and database once, percent-decoded", () => {
    expect(parsed("postgres://app:p%23ss%40w%3Frd%2F%25x@db.example.com:6432/shop%20db?sslmode=require")).toEqual({
      scheme: "postgres://",
      hosts: [{ host: "db.example.com", port: 6432 }],
      user: "app",
      password: "p#ss@w?rd/%x",
      database: "shop db",
      query: "sslmode=require"
    })
    expect(parsed("postgresql://db/shop")).toMatchObject({ hosts: [{ host: "db", port: 5432 }], user: undefined, password: undefined })
    expect(parsed("postgres://u:pa:ss@h1:5432,h2:5433,[::1]:5434/db").hosts).toEqual([
      { host: "h1", port: 5432 },
      { host: "h2", port: 5433 },
      { host: "::1", port: 5434 }
    ])
    expect(parsed("postgres://u:pa:ss@h1/db").password).toBe("pa:ss")
    expect(parsed("postgres:///db").hosts).toEqual([{ host: "localhost", port: 5432 }])
  })

  it("refuses #, ?, / and a second @ in the user name or password, and a bad %, without quoting the URL", () => {
    const secret = "Zq9canary"
    const cases = [
      [`postgres://app:${secret}#x@db/shop`, /contains a '#'/],
      [`postgres://app:${secret}@x@db/shop`, /contains an '@' that is not percent-encoded/],
      [`postgres://app:${secret}?x@db/shop`, /an '@' after its host part/],
      [`postgres://app:${secret}/x@db/shop`, /an '@' after its host part/],
      [`postgres://app:${secret}%zz@db/shop`, /'%' that does not start a %XX escape/],
      [`postgres://app:${secret}@db/shop/x`, /database name/],
      [`postgres://app:${secret}/shop`, /port of the connection URL is not a number/],
      [`postgres://app:${secret}@d%62/shop`, /host of the connection URL is not a host name/],
      [`mysql://app:${secret}@db/shop`, /must start with postgres:\/\//]
    ] as const
    for (const [url, message] of cases) {
      const result = parsePostgresUrl(url)
      expect(isUrlProblem(result), url).toBe(true)
      if (!isUrlProblem(result)) continue
      expect(result.message, url).toMatch(message)
      expect(`${result.message} ${result.hint}`).not.toContain(secret)
      expect(maskUrl(url)).toBe("(invalid PostgreSQL URL)")
    }
    expect(parsePostgresUrl("postgres://app:x#y@db/shop")).toMatchObject({ hint: expect.stringContaining("# → %23") })
  })

  it("hands the driver explicit options and a URL with only the settings", () => {
    expect(connectionTarget(parsed("postgres://app:p%23w@h1:5432,h2:5433/shop?sslmode=disable&application_name=x"))).toEqual({
      // The TLS parameters are Rivet's to read (postgres-tls.ts): the driver gets an explicit `ssl` instead.
      settingsUrl: "postgres://localhost/?application_name=x",
      options: { host: ["h1", "h2"], port: [5432, 5433], user: "app", pass: "p#w", database: "shop" }
    })
    expect(connectionTarget(parsed("postgres://db"))).toEqual({ settingsUrl: "postgres://localhost/", options: { host: ["db"], port: [5432] } })
  })

  it("masks the password, showing the hosts, ports and database dialled", () => {
    expect(maskUrl("postgres://app:s3cret@db:5432/shop")).toBe("postgres://app:***@db:5432/shop")
    expect(maskUrl("postgresql://app@db/shop")).toBe("postgresql://app@db:5432/shop")
    expect(maskUrl("postgres://db/shop")).toBe("postgres://db:5432/shop")
    expect(maskUrl("postgres://u:p%40ss%2Fw%3Frd@h1:5432,h2:5433/db?sslmode=require")).toBe(
      "postgres://u:***@h1:5432,h2:5433/db?sslmode=require"
    )
    expect(maskUrl("postgres://u@h/db?password=hunter2&x=1")).toBe("postgres://u@h:5432/db?password=***&x=1")
    expect(maskUrl("not a url")).not.toContain("not a url")
  })

  it("scrubs the raw and percent-decoded password from any text", () => {
    const scrub = makeScrubber("postgres://app:p%40ssw0rd@db/shop")
    expect(scrub("failed for postgres://app:p%40ssw0rd@db/shop with p@ssw0rd and p%40ssw0rd")).toBe(
      "failed for postgres://app:***@db:5432/shop with *** and ***"
    )
    // A URL that was refused still has its password scrubbed (as any driver could have split it).
    expect(makeScrubber("postgres://app:ab#cd@ef@db/shop")("ab#cd@ef ab#cd")).not.toContain("ab#cd@ef")
  })

  it("is refused at config load under source.url, naming the fix and not the password", () => {
    const messages = Either.match(decodeBlock(postgresSource.config, { url: "postgres://app:Zq9canary#1@db/shop" }, "source"), {
      onLeft: (errors) => errors.map((error) => `${error.path}: ${error.message}`),
      onRight: () => []
    })
    expect(messages).toEqual([expect.stringMatching(/^source\.url: the connection URL contains a '#'.*# → %23/)])
    expect(messages.join("")).not.toContain("Zq9canary")
  })
})
