import { describe, expect, it } from "@effect/vitest"
import * as Either from "effect/Either"
import * as ParseResult from "effect/ParseResult"
import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { decodeBlock } from "../../../src/runtime/config/issues.js"
import postgresSource from "../../../src/sources/postgres/index.js"
import { makeScrubber, maskUrl } from "../../../src/sources/postgres/url.js"

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

  it("requires exactly one of url, url_env and embedded", () => {
    expect(decode({})).toEqual(Either.left("set one of `url`, `url_env` or `embedded` to say which database to read"))
    expect(decode({ url: "postgres://h/db", url_env: "X" })).toEqual(
      Either.left("set only one of `url`, `url_env` or `embedded` (found `url` and `url_env`)")
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

describe("url masking", () => {
  it("masks the password, keeping user, host and database", () => {
    expect(maskUrl("postgres://app:s3cret@db:5432/shop")).toBe("postgres://app:***@db:5432/shop")
    expect(maskUrl("postgresql://app@db/shop")).toBe("postgresql://app@db/shop")
    expect(maskUrl("postgres://db/shop")).toBe("postgres://db/shop")
    expect(maskUrl("postgres://u:p@ss/w?rd@h1:5432,h2:5433/db?sslmode=require")).toBe(
      "postgres://u:***@h1:5432,h2:5433/db?sslmode=require"
    )
    expect(maskUrl("postgres://u@h/db?password=hunter2&x=1")).toBe("postgres://u@h/db?password=***&x=1")
    expect(maskUrl("not a url")).not.toContain("not a url")
  })

  it("scrubs the raw and percent-decoded password from any text", () => {
    const scrub = makeScrubber("postgres://app:p%40ssw0rd@db/shop")
    expect(scrub("failed for postgres://app:p%40ssw0rd@db/shop with p@ssw0rd and p%40ssw0rd")).toBe(
      "failed for postgres://app:***@db/shop with *** and ***"
    )
  })
})
