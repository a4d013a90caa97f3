import * as Schema from "effect/Schema"
import { connectionUrlFields, secondsField, tlsBlock } from "../../../core/source/config-fields.js"
import { connectionProblem } from "../../../core/source/connection.js"
import { urlProblem } from "./url.js"

/**
 * The `source:` block of a `mysql` source (without `type`): MySQL 8 or MariaDB 10.5+. A URL (`url`, `url_env`,
 * `url_file`) or host/user/database say which database to read.
 */
export const MysqlConfig = Schema.Struct({
  ...connectionUrlFields({
    urlProblem,
    description:
      "Connection URL, `mysql://user:password@host:3306/database` (optionally `?ssl-mode=VERIFY_IDENTITY&ssl-ca=ca.pem`, or the `tls:` block); percent-encode `#`, `?`, `/`, `@` and `%` in the user name and password. Prefer `url_env` for secrets.",
    exampleVariable: "MYSQL_URL",
    scheme: "mysql",
    defaultPort: 3306
  }),
  tls: Schema.optional(
    tlsBlock({ urlParameters: "The URL's `ssl-mode` (DISABLED, REQUIRED, VERIFY_CA, VERIFY_IDENTITY), `ssl-ca`, `ssl-cert` and `ssl-key`" })
  ),
  statement_timeout_s: secondsField(
    "Server-side time limit in seconds for each export statement (MariaDB max_statement_time, MySQL max_execution_time; 0 = none).",
    300
  ),
  lock_timeout_s: secondsField("How long a statement may wait for a lock, in seconds (0 = the server's longest).", 30),
  zero_dates: Schema.optionalWith(
    Schema.Literal("error", "null").annotations({
      description:
        "What to do with zero dates (`0000-00-00`, `2024-00-10`) in date/datetime/timestamp columns: `error` (default) fails naming the column and row, `null` exports them as NULL."
    }),
    { default: () => "error" as const }
  )
}).pipe(
  Schema.filter(
    (config) => connectionProblem(config) ?? true,
    { identifier: "MysqlConfig" }
  ),
  Schema.annotations({ description: "Read from MySQL or MariaDB (mysql2): one consistent read-only snapshot per export." })
)

export type MysqlConfig = typeof MysqlConfig.Type
export type MysqlConfigInput = typeof MysqlConfig.Encoded
