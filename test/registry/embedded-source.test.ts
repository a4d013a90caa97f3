import { describe, expect, it } from "@effect/vitest"
import * as Effect from "effect/Effect"
import * as Schema from "effect/Schema"
import { SourceDriver, type SourcePlugin } from "../../src/core/plugin.js"
import postgresSource from "../../src/plugins/sources/postgres/index.js"
import { builtinSources } from "../../src/registry/builtins.js"
import { testPgUrl } from "../support/pg.js"

/** Builds `plugin`'s driver for a `source:` block (decoded as the runtime does) and runs its connection check. */
const check = (plugin: SourcePlugin, input: unknown, env: Record<string, string> = {}) =>
  Effect.gen(function* () {
    const config = yield* Schema.decodeUnknown(plugin.config)(input)
    return yield* Effect.flatMap(SourceDriver, (driver) => driver.check).pipe(
      Effect.provide(plugin.make(config, { configDir: process.cwd(), env }))
    )
  })

describe("source.embedded is served where the program is put together, not by the postgres source", () => {
  it.effect("the postgres plugin on its own starts no server: `embedded` fails, naming the key and the way out", () =>
    Effect.gen(function* () {
      const error = yield* Effect.flip(check(postgresSource as unknown as SourcePlugin, { embedded: {} }))
      expect(error).toMatchObject({ _tag: "SourceError" })
      expect(String((error as { message: string }).message)).toContain(
        "source.embedded: this program does not start the embedded demo PostgreSQL"
      )
      expect((error as { hint?: string }).hint).toContain("`url` / `url_env`")
    })
  )

  it.effect("the built-in postgres source passes a config without `embedded` to the plugin as it is", () =>
    Effect.gen(function* () {
      const builtin = yield* Effect.promise(() => builtinSources.postgres!())
      yield* check(builtin, { url_env: "PG" }, { PG: testPgUrl() })
      const error = yield* Effect.flip(check(builtin, { url_env: "PG" }))
      expect((error as { message: string }).message).toContain("environment variable PG (source.url_env) is not set")
    })
  )
})
