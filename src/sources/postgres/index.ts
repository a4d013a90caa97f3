import * as Layer from "effect/Layer"
import { defineSource, SourceDriver } from "../../runtime/plugin.js"
import { PostgresConfig } from "./config.js"
import { makePostgresDriver } from "./driver.js"

/** The `postgres` source: lossless, streaming reads from PostgreSQL through postgres.js. */
export default defineSource({
  type: "postgres",
  config: PostgresConfig,
  description: "PostgreSQL: each export reads a read-only snapshot through a server-side cursor, losslessly typed.",
  make: (config, context) => Layer.scoped(SourceDriver, makePostgresDriver(config, context))
})

export { PostgresConfig } from "./config.js"
