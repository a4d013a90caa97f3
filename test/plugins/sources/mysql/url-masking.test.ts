import * as Effect from "effect/Effect"
import { describe, expect, it } from "vitest"
import { loadConfig } from "../../../../src/api.js"
import { silentProgress } from "../../../../src/core/progress.js"
import { runConfig } from "../../../../src/engine/run.js"
import { displayAddress, isUrlProblem, makeScrubber, parseMysqlUrl, urlProblem } from "../../../../src/plugins/sources/mysql/url.js"
import { sqliteStateLayer } from "../../../../src/state/sqlite.js"
import { untyped } from "../../../support/config.js"

// The MySQL URL's secrets: the userinfo password (raw, percent-encoded, with characters a URL gives a meaning to).
// Its query takes only ssl-mode, so a `password=` parameter anywhere is refused without quoting its value. No
// server is needed: the connection error comes from a closed port.

const CANARY = "My-canary-5t"

const formsOf = (secret: string): ReadonlyArray<string> => [secret, encodeURIComponent(secret)]

const expectNoSecret = (text: string, secret: string) => {
  for (const form of formsOf(secret)) expect(text, `"${form}" in: ${text}`).not.toContain(form)
}

describe("MySQL URL masking", () => {
  it.each([
    ["plain", CANARY],
    ["percent-encoded @ / ? # % & and a space", `${CANARY}@/?#%& x`]
  ])("a %s password is masked for display and scrubbed in every form from library text", (_label, password) => {
    const url = `mysql://app:${encodeURIComponent(password)}@db.internal:3307/shop?ssl-mode=REQUIRED`
    const address = parseMysqlUrl(url)
    if (isUrlProblem(address)) throw new Error(address.message)
    expect(address.password).toBe(password)
    expect(displayAddress(address)).toBe("mysql://app:***@db.internal:3307/shop")
    const scrub = makeScrubber(address, url)
    const text = scrub(`Access denied (${password}) ${encodeURIComponent(password)} at ${url}`)
    expectNoSecret(text, password)
    expect(text).toContain("db.internal:3307/shop")
  })

  it.each([
    ["first", `?password=${CANARY}&ssl-mode=REQUIRED`],
    ["after another parameter", `?ssl-mode=REQUIRED&password=${CANARY}`],
    ["in the middle", `?ssl-mode=REQUIRED&password=${CANARY}&sslmode=DISABLED`],
    ["named in upper case", `?ssl-mode=REQUIRED&PASSWORD=${CANARY}`]
  ])("a password= parameter %s is refused without quoting its value", (_label, query) => {
    const problem = urlProblem(`mysql://app@db/shop${query}`)
    expect(problem?.message).toMatch(/unknown parameter `password`/i)
    expectNoSecret(`${problem?.message} ${problem?.hint}`, CANARY)
  })

  it("a source that cannot be reached names the masked URL, and no secret, in its error", async () => {
    const url = `mysql://app:${encodeURIComponent(`${CANARY}@/`)}@127.0.0.1:1/shop`
    const config = await Effect.runPromise(
      loadConfig(
        untyped({
          source: { type: "mysql", url },
          exports: [{ name: "t", table: "t", format: "csv", destination: { type: "local", path: "out" } }]
        }),
        { configDir: "/nonexistent-rivet-dir" }
      )
    )
    const error = await Effect.runPromise(
      Effect.flip(
        runConfig(config, { retry: { maxRetries: 0, initialDelay: "1 millis", maxDelay: "1 millis" }, state: sqliteStateLayer(":memory:") }).pipe(
          Effect.provide(silentProgress)
        )
      )
    )
    const text = `${error.message} ${"hint" in error ? String(error.hint) : ""}`
    expect(text).toContain("127.0.0.1")
    expectNoSecret(text, `${CANARY}@/`)
  }, 30_000)
})
