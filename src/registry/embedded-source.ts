import * as path from "node:path"
import * as Context from "effect/Context"
import * as Effect from "effect/Effect"
import * as Layer from "effect/Layer"
import * as Redacted from "effect/Redacted"
import { SourceDriver, type SourcePlugin } from "../core/plugin.js"
import type { PostgresConfig, PostgresConfigInput } from "../plugins/sources/postgres/config.js"

type PostgresPlugin = SourcePlugin<PostgresConfig, PostgresConfigInput, "postgres">

/**
 * The built-in `postgres` source with `source.embedded` served. The source plugin only ever connects to a URL; here,
 * at the edge, a config asking for the embedded demo database starts it (seeded on first use) in the source layer's
 * scope — so it stops when the source closes — and hands the plugin its URL. The module is loaded only then.
 */
export const withEmbeddedServer = (plugin: PostgresPlugin): PostgresPlugin => ({
  ...plugin,
  make: (config, context) => {
    const { embedded, ...connect } = config
    if (embedded === undefined) return plugin.make(config, context)
    return Layer.unwrapScoped(
      Effect.gen(function* () {
        const { startEmbedded } = yield* Effect.promise(() => import("../embedded-postgres/server.js"))
        const dataDir = path.resolve(context.configDir, embedded.data_dir ?? ".rivet-demo")
        const { url } = yield* startEmbedded({ dataDir, port: embedded.port })
        // The server listens on a port chosen afresh at each start: a run is tied to its data directory instead.
        return Layer.map(plugin.make({ ...connect, url: Redacted.make(url) }, context), (drivers) => {
          const driver = Context.get(drivers, SourceDriver)
          const identity = { database: "", user: "", ...driver.identity, host: `embedded:${dataDir}`, port: "" }
          return Context.add(drivers, SourceDriver, { ...driver, identity })
        })
      })
    )
  }
})
