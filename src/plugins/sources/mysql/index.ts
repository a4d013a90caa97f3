import * as Layer from "effect/Layer"
import { defineSource, SourceDriver } from "../../../core/plugin.js"
import { MysqlConfig } from "./config.js"
import { discoverMysql } from "./discover.js"
import { makeMysqlDriver } from "./driver.js"

/** The `mysql` source: lossless, streaming reads from MySQL 8 and MariaDB through mysql2. */
export default defineSource({
  type: "mysql",
  config: MysqlConfig,
  description: "MySQL / MariaDB: each export reads a consistent read-only snapshot as a streamed result, losslessly typed.",
  make: (config, context) => Layer.scoped(SourceDriver, makeMysqlDriver(config, context)),
  discovery: { schemes: ["mysql", "mariadb"], discover: discoverMysql }
})

export { MysqlConfig } from "./config.js"
