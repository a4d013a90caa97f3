import * as Layer from "effect/Layer"
import { defineSource, SourceDriver } from "../../../core/plugin.js"
import { PostgresConfig } from "./config.js"
import { discoverPostgres } from "./discover.js"
import { makePostgresDriver } from "./driver.js"

/** The `postgres` source: lossless, streaming reads from PostgreSQL through postgres.js. */
export default defineSource({
  type: "postgres",
  config: PostgresConfig,
  description: "PostgreSQL: each export reads a read-only snapshot through binary COPY, losslessly typed.",
  make: (config, context) => Layer.scoped(SourceDriver, makePostgresDriver(config, context)),
  discovery: { schemes: ["postgres", "postgresql"], discover: discoverPostgres }
})

export { PostgresConfig } from "./config.js"
