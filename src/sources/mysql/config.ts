import * as Redacted from "effect/Redacted"
import * as Schema from "effect/Schema"
import { urlProblem } from "./url.js"

const Seconds = (description: string, fallback: number) =>
  Schema.optionalWith(Schema.NonNegativeInt.annotations({ description }), { default: () => fallback })

// Neither message echoes the value: a user who misread `url_env` may have pasted the URL, password included.
const urlEnvProblem = (name: string): string | undefined => {
  if (name.includes("://") || name.includes("@")) {
    return "url_env must be the NAME of an environment variable holding the connection URL (e.g. MYSQL_URL), not the URL itself: export MYSQL_URL=mysql://… and write url_env: MYSQL_URL"
  }
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)
    ? undefined
    : "url_env must be the name of an environment variable (letters, digits and _), e.g. MYSQL_URL"
}

/**
 * The `source:` block of a `mysql` source (without `type`): MySQL 8 or MariaDB 10.5+. Exactly one of `url` or
 * `url_env` says which database to read.
 */
export const MysqlConfig = Schema.Struct({
  url: Schema.optional(
    Schema.Redacted(
      Schema.String.annotations({ message: () => "expected a string: the connection URL (value not shown)" })
    )
      .pipe(
        Schema.filter((url) => {
          const found = urlProblem(Redacted.value(url))
          return found === undefined ? true : `${found.message}; ${found.hint}`
        })
      )
      .annotations({
        description:
          "Connection URL, `mysql://user:password@host:3306/database` (optionally `?ssl-mode=REQUIRED`); percent-encode `#`, `?`, `/`, `@` and `%` in the user name and password. Prefer `url_env` for secrets."
      })
  ),
  url_env: Schema.optional(
    Schema.NonEmptyString.annotations({
      description: "Name of an environment variable holding the connection URL."
    }).pipe(Schema.filter((name) => urlEnvProblem(name) ?? true))
  ),
  statement_timeout_s: Seconds(
    "Server-side time limit in seconds for each export statement (MariaDB max_statement_time, MySQL max_execution_time; 0 = none).",
    300
  ),
  lock_timeout_s: Seconds("How long a statement may wait for a lock, in seconds (0 = the server's longest).", 30),
  zero_dates: Schema.optionalWith(
    Schema.Literal("error", "null").annotations({
      description:
        "What to do with zero dates (`0000-00-00`, `2024-00-10`) in date/datetime/timestamp columns: `error` (default) fails naming the column and row, `null` exports them as NULL."
    }),
    { default: () => "error" as const }
  )
}).pipe(
  Schema.filter(
    (config) => {
      if ((config.url === undefined) !== (config.url_env === undefined)) return true
      return config.url === undefined
        ? "set one of `url` or `url_env` to say which database to read"
        : "set only one of `url` or `url_env` (found both)"
    },
    { identifier: "MysqlConfig" }
  ),
  Schema.annotations({ description: "Read from MySQL or MariaDB (mysql2): one consistent read-only snapshot per export." })
)

export type MysqlConfig = typeof MysqlConfig.Type
export type MysqlConfigInput = typeof MysqlConfig.Encoded
