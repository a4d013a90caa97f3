import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import { describe, expect, it } from "vitest"
import { loadConfig } from "../../../src/api.js"
import { silentProgress } from "../../../src/core/progress.js"
import { displayAddress, isUrlProblem, makeScrubber, maskUrl, parsePostgresUrl } from "../../../src/core/source/postgres-url.js"
import { runConfig } from "../../../src/engine/run.js"
import { describeStateLocation } from "../../../src/state/layer.js"
import { postgresStateLayer } from "../../../src/state/postgres.js"
import { sqliteStateLayer } from "../../../src/state/sqlite.js"
import { StateStore } from "../../../src/state/store.js"
import { untyped } from "../../support/config.js"

// Every place a PostgreSQL URL can carry a secret, each with its own canary, masked wherever Rivet prints the URL:
// the userinfo password and the `password` / `sslpassword` query parameters first, in the middle and last, in any
// letter case, with percent-encoded names and values. None of these needs a server: errors come from a closed port.

const USERINFO = "Ui-canary-7q"
const QUERY = "Qp-canary-3z"
const SSL = "Sp-canary-9k"
const CANARIES = [USERINFO, QUERY, SSL]

/** Every form a secret may take in text: as written, percent-encoded and decoded. */
const formsOf = (secret: string): ReadonlyArray<string> => [secret, encodeURIComponent(secret), decodeURIComponent(secret)]

const expectNoSecret = (text: string, secrets: ReadonlyArray<string> = CANARIES) => {
  for (const secret of secrets) for (const form of formsOf(secret)) expect(text, `"${form}" in: ${text}`).not.toContain(form)
}

/** A closed port on loopback: connecting fails at once with ECONNREFUSED. */
const CLOSED = "127.0.0.1:1"

const positions: ReadonlyArray<readonly [string, string, string]> = [
  ["password first", `?password=${QUERY}&connect_timeout=2`, "?password=***&connect_timeout=2"],
  ["password last, after another parameter", `?connect_timeout=2&password=${QUERY}`, "?connect_timeout=2&password=***"],
  ["password in the middle", `?sslmode=disable&password=${QUERY}&connect_timeout=2`, "?sslmode=disable&password=***&connect_timeout=2"],
  ["PASSWORD in upper case", `?connect_timeout=2&PASSWORD=${QUERY}`, "?connect_timeout=2&PASSWORD=***"],
  ["a percent-encoded name", `?connect_timeout=2&pass%77ord=${QUERY}`, "?connect_timeout=2&pass%77ord=***"],
  ["sslpassword after another parameter", `?sslmode=require&sslpassword=${SSL}`, "?sslmode=require&sslpassword=***"],
  ["both, and an empty parameter", `?a=1&&sslpassword=${SSL}&password=${QUERY}&b=2`, "?a=1&&sslpassword=***&password=***&b=2"]
]

describe("PostgreSQL URL masking", () => {
  it.each(positions)("masks the query parameter: %s", (_label, query, masked) => {
    const url = `postgres://app:${USERINFO}@db:5432/shop${query}`
    expect(maskUrl(url)).toBe(`postgres://app:***@db:5432/shop${masked}`)
    const parsed = parsePostgresUrl(url)
    if (isUrlProblem(parsed)) throw new Error(parsed.message)
    expect(displayAddress(parsed)).toBe(`postgres://app:***@db:5432/shop${masked}`)
    const scrub = makeScrubber(url)
    const present = CANARIES.filter((canary) => url.includes(canary))
    expectNoSecret(scrub(`failed: ${url} (${present.join(", ")})`), present)
    // The URL in a message becomes its masked form, not just a string of stars.
    expect(scrub(`connect ${url}`)).toBe(`connect postgres://app:***@db:5432/shop${masked}`)
  })

  it("masks percent-encoded secrets in every form: as written, decoded, and with + for a space", () => {
    const password = "p@ss/w?rd&x=1 %"
    const url = `postgres://app:${encodeURIComponent(USERINFO + password)}@db/shop?connect_timeout=2&password=${encodeURIComponent(QUERY + password)}`
    expect(maskUrl(url)).toBe("postgres://app:***@db:5432/shop?connect_timeout=2&password=***")
    const scrub = makeScrubber(url)
    const text = [USERINFO + password, encodeURIComponent(USERINFO + password), QUERY + password, encodeURIComponent(QUERY + password)].join(" | ")
    expect(scrub(text)).toBe("*** | *** | *** | ***")
    const plus = makeScrubber("postgres://db/shop?x=1&password=Qp+canary+3z")
    expect(plus("got Qp canary 3z and Qp+canary+3z")).toBe("got *** and ***")
  })

  it("masks the secrets of a URL it refuses (a driver could have split it any way)", () => {
    const url = `postgres://app:${USERINFO}#frag@db/shop?connect_timeout=2&password=${QUERY}`
    expect(maskUrl(url)).toBe("(invalid PostgreSQL URL)")
    expectNoSecret(makeScrubber(url)(`text with ${USERINFO}#frag and ${QUERY}`))
  })

  it("leaves parameters that only contain the word alone", () => {
    expect(maskUrl("postgres://db/shop?application_name=password&passwords=3&x_password=4")).toBe(
      "postgres://db:5432/shop?application_name=password&passwords=3&x_password=4"
    )
  })

  const secretUrl = `postgres://app:${USERINFO}@${CLOSED}/shop?connect_timeout=2&sslpassword=${SSL}&password=${QUERY}`

  it("the state database's location and connection error show the masked URL only", async () => {
    expect(describeStateLocation({ _tag: "postgres", url: secretUrl })).toBe(
      `postgres://app:***@${CLOSED}/shop?connect_timeout=2&sslpassword=***&password=***`
    )
    const error = await Effect.runPromise(
      Effect.flip(
        Effect.flatMap(StateStore, (state) => state.run("r")).pipe(
          Effect.provide(postgresStateLayer(secretUrl, { maxRetries: 0, initialDelay: "1 millis", maxDelay: "1 millis" }))
        )
      )
    )
    const text = `${error.message} ${error.hint ?? ""}`
    expect(text).toContain(`postgres://app:***@${CLOSED}/shop?connect_timeout=2&sslpassword=***&password=***`)
    expectNoSecret(text)
  }, 30_000)

  it("a source that cannot be reached names the masked URL, and no secret, in its error", async () => {
    const config = await Effect.runPromise(
      loadConfig(
        untyped({
          source: { type: "postgres", url: secretUrl },
          exports: [{ name: "t", table: "t", format: "csv", destination: { type: "local", path: "out" } }]
        }),
        { configDir: "/nonexistent-rivet-dir" }
      )
    )
    const error = await Effect.runPromise(
      Effect.flip(
        runConfig(config, { retry: { maxRetries: 0, initialDelay: "1 millis", maxDelay: "1 millis" }, state: sqliteStateLayer(":memory:") }).pipe(
          Effect.provide(Layer.mergeAll(silentProgress))
        )
      )
    )
    const text = `${error.message} ${"hint" in error ? String(error.hint) : ""}`
    expect(text).toContain(`app:***@${CLOSED}`)
    expectNoSecret(text)
  }, 30_000)
})
