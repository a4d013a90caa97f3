import * as Schema from "effect/Schema"
import * as Redacted from "effect/Redacted"
import { identifierLengthProblem } from "../../runtime/config/model.js"
import { urlProblem } from "./url.js"

const EmbeddedConfig = Schema.Struct({
  data_dir: Schema.optional(
    Schema.NonEmptyString.annotations({
      description: "Data directory of the demo database, relative to the config file (default `.rivet-demo`)."
    })
  ),
  port: Schema.optional(
    Schema.Int.pipe(Schema.between(1, 65535)).annotations({
      description: "TCP port of the demo database (default: a free port).",
      message: () => "port must be a whole number from 1 to 65535"
    })
  )
}).annotations({
  description: "Start an embedded demo PostgreSQL seeded with sample data, instead of connecting to a server."
})

const Seconds = (description: string, fallback: number) =>
  Schema.optionalWith(Schema.NonNegativeInt.annotations({ description }), { default: () => fallback })

const connectionKeys = ["url", "url_env", "embedded"] as const

// Neither message echoes the value: a user who misread `url_env` may have pasted the URL, password included.
const urlEnvProblem = (name: string): string | undefined => {
  if (name.includes("://") || name.includes("@")) {
    return "url_env must be the NAME of an environment variable holding the connection URL (e.g. DATABASE_URL), not the URL itself: export DATABASE_URL=postgres://… and write url_env: DATABASE_URL"
  }
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(name)
    ? undefined
    : "url_env must be the name of an environment variable (letters, digits and _), e.g. DATABASE_URL"
}

/**
 * The `source:` block of a `postgres` source (without `type`). Exactly one of `url`, `url_env` or `embedded`
 * says where the data comes from.
 */
export const PostgresConfig = Schema.Struct({
  url: Schema.optional(
    // The default message would quote a non-string value (`actual [...]`), which may hold the password.
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
          "Connection URL, `postgres://user:password@host:5432/database`; percent-encode `#`, `?`, `/`, `@` and `%` in the user name and password. Prefer `url_env` for secrets."
      })
  ),
  url_env: Schema.optional(
    Schema.NonEmptyString.annotations({
      description: "Name of an environment variable holding the connection URL."
    }).pipe(Schema.filter((name) => urlEnvProblem(name) ?? true))
  ),
  embedded: Schema.optional(EmbeddedConfig),
  schema: Schema.optionalWith(
    Schema.NonEmptyString.annotations({
      description: "Schema that unqualified table names (and `table:` shortcuts) resolve to first."
    }).pipe(Schema.filter((name) => identifierLengthProblem("schema name", name) ?? true)),
    { default: () => "public" }
  ),
  statement_timeout_s: Seconds("Server-side statement timeout in seconds for each export query (0 = none).", 300),
  lock_timeout_s: Seconds("How long a query may wait for a lock, in seconds (0 = forever).", 30),
  application_name: Schema.optionalWith(
    Schema.String.annotations({ description: "`application_name` shown in `pg_stat_activity`." }),
    { default: () => "rivet" }
  )
}).pipe(
  Schema.filter(
    (config) => {
      const given = connectionKeys.filter((key) => config[key] !== undefined)
      if (given.length === 1) return true
      return given.length === 0
        ? "set one of `url`, `url_env` or `embedded` to say which database to read"
        : `set only one of \`url\`, \`url_env\` or \`embedded\` (found ${given.map((key) => `\`${key}\``).join(" and ")})`
    },
    { identifier: "PostgresConfig" }
  ),
  Schema.annotations({ description: "Read from PostgreSQL (postgres.js): one read-only snapshot per export." })
)

export type PostgresConfig = typeof PostgresConfig.Type
export type PostgresConfigInput = typeof PostgresConfig.Encoded
