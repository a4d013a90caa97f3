import * as Effect from "effect/Effect"
import * as Either from "effect/Either"
import { loadConfig, type RivetConfigInput } from "rivet-export"
import { describe, expect, it } from "vitest"
import plugin from "../src/index.js"

const KEY_AUTH = { account_url: "https://myaccount.blob.core.windows.net", account_key_env: "AZURE_STORAGE_KEY" }

/** Decodes a destination block through Rivet's own config loader, as `rivet run` does. */
const decode = async (destination: Record<string, unknown>) => {
  // Deliberately wrong blocks too: passed as untyped input, checked by the loader at run time.
  const config: unknown = {
    source: { type: "postgres", url: "postgres://app@127.0.0.1:5432/shop" },
    exports: [{ name: "orders", table: "orders", format: "csv", destination: { type: "azure", ...destination } }]
  }
  // `AnyPlugin` is `SinkPlugin<never, never> | …`, which a plugin with a real config type does not widen to.
  const result = await Effect.runPromise(Effect.either(loadConfig(config as RivetConfigInput, { plugins: [plugin as never] })))
  return Either.map(result, (decoded) => decoded.exports[0]!.destination.config as Record<string, unknown>)
}

const problem = async (destination: Record<string, unknown>) => {
  const result = await decode(destination)
  if (Either.isRight(result)) throw new Error(`accepted: ${JSON.stringify(destination)}`)
  return { path: result.left.path, message: result.left.message }
}

describe("azure destination config", () => {
  it("decodes account key auth with defaults and a normalised prefix", async () => {
    const result = await decode({ container: "exports", prefix: "daily/orders", ...KEY_AUTH })
    expect(Either.getOrThrow(result)).toEqual({
      container: "exports",
      prefix: "daily/orders/",
      ...KEY_AUTH,
      block_size: 8 * 1024 ** 2,
      upload_concurrency: 4
    })
  })

  it("accepts each single auth source", async () => {
    expect(Either.isRight(await decode({ container: "exports", connection_string_env: "AZURE_STORAGE_CONNECTION_STRING" }))).toBe(true)
    expect(Either.isRight(await decode({ container: "exports", account_url: KEY_AUTH.account_url, sas_token_env: "SAS" }))).toBe(true)
    expect(
      Either.isRight(
        await decode({ container: "exports", account_url: "http://127.0.0.1:10000", account_name: "devstoreaccount1", account_key_env: "K" })
      )
    ).toBe(true)
  })

  it("rejects unknown keys", async () => {
    expect(await problem({ container: "exports", ...KEY_AUTH, bucket: "x" })).toMatchObject({
      path: "exports[0].destination.bucket",
      message: "unknown key 'bucket'"
    })
  })

  it("requires a container and one auth source", async () => {
    expect(await problem(KEY_AUTH)).toEqual({
      path: "exports[0].destination.container",
      message: "container is required: the name of an existing blob container, e.g. exports"
    })
    expect(await problem({ container: "exports" })).toMatchObject({
      path: "exports[0].destination.account_url",
      message: expect.stringMatching(/no credentials configured: set connection_string_env, or account_url with/)
    })
    expect(await problem({ container: "exports", account_url: KEY_AUTH.account_url })).toMatchObject({
      path: "exports[0].destination.account_key_env",
      message: expect.stringMatching(/needs a credential/)
    })
  })

  it("rejects two auth sources at once", async () => {
    expect(await problem({ container: "exports", ...KEY_AUTH, sas_token_env: "SAS" })).toMatchObject({
      path: "exports[0].destination.sas_token_env",
      message: "choose one: account_key_env or sas_token_env"
    })
    expect(await problem({ container: "exports", ...KEY_AUTH, connection_string_env: "CS" })).toMatchObject({
      path: "exports[0].destination.account_url",
      message: expect.stringMatching(/choose one auth source/)
    })
  })

  it("needs an account name it can find for shared key auth", async () => {
    expect(await problem({ container: "exports", account_url: "http://127.0.0.1:10000", account_key_env: "K" })).toMatchObject({
      path: "exports[0].destination.account_name",
      message: expect.stringMatching(/does not show the account name/)
    })
  })

  it("guards plain http: loopback only, unless allow_http", async () => {
    const remote = { container: "exports", account_url: "http://10.1.2.3:10000/devstoreaccount1", account_key_env: "K" }
    expect(await problem(remote)).toMatchObject({
      path: "exports[0].destination.account_url",
      message: expect.stringMatching(/plain http to the non-loopback host '10\.1\.2\.3'.*allow_http: true/)
    })
    expect(Either.isRight(await decode({ ...remote, allow_http: true }))).toBe(true)
    for (const url of ["http://localhost:10000/devstoreaccount1", "http://127.0.0.1:10000/devstoreaccount1", "http://[::1]:10000/devstoreaccount1"]) {
      expect(Either.isRight(await decode({ ...remote, account_url: url })), url).toBe(true)
    }
    // A URL whose text mentions localhost but connects elsewhere.
    expect((await problem({ ...remote, account_url: "http://localhost.evil.example/devstoreaccount1" })).message).toMatch(/non-loopback/)
  })

  it("keeps secrets out of account_url and the *_env keys, without echoing them", async () => {
    const withSas = await problem({ container: "exports", account_url: `${KEY_AUTH.account_url}?sv=2024&sig=SECRETSIG`, sas_token_env: "S" })
    expect(withSas.message).toMatch(/SAS token is a secret/)
    expect(withSas.message).not.toContain("SECRETSIG")
    const pasted = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
    const key = await problem({ container: "exports", account_url: KEY_AUTH.account_url, account_key_env: pasted })
    expect(key).toMatchObject({ path: "exports[0].destination.account_key_env", message: expect.stringMatching(/looks like a secret itself/) })
    expect(key.message).not.toContain(pasted)
  })

  it("rejects bad container names, prefixes and account URLs", async () => {
    expect((await problem({ container: "My_Container", ...KEY_AUTH })).message).toMatch(/not a valid container name/)
    expect((await problem({ container: "exports/daily", ...KEY_AUTH })).message).toMatch(/put any folder path in prefix/)
    expect((await problem({ container: "exports", prefix: "/daily", ...KEY_AUTH })).message).toMatch(/must not start with '\/'/)
    expect((await problem({ container: "exports", prefix: "daily/../x", ...KEY_AUTH })).message).toMatch(/'\.\.' segments/)
    expect(
      (await problem({ container: "exports", ...KEY_AUTH, account_url: "https://myaccount.blob.core.windows.net/exports" })).message
    ).toMatch(/without the container/)
    expect((await problem({ container: "exports", ...KEY_AUTH, account_url: "ftp://myaccount" })).message).toMatch(/must use https/)
    expect((await problem({ container: "exports", ...KEY_AUTH, block_size: "512KiB" })).message).toMatch(/1MiB to 4000MiB/)
    expect((await problem({ container: "exports", ...KEY_AUTH, upload_concurrency: 0 })).message).toMatch(/1 to 64/)
  })
})
