import * as Schema from "effect/Schema"
import { identifierLengthProblem } from "../../../core/source/identifiers.js"
import { connectionUrlFields, secondsField, tlsBlock } from "../../../core/source/config-fields.js"
import { connectionProblem } from "../../../core/source/connection.js"
import { urlProblem } from "../../../core/source/postgres-url.js"

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

/**
 * The `source:` block of a `postgres` source (without `type`). Exactly one of `url`, `url_env` or `embedded`
 * says where the data comes from.
 */
export const PostgresConfig = Schema.Struct({
  ...connectionUrlFields({
    urlProblem,
    description:
      "Connection URL, `postgres://user:password@host:5432/database`; percent-encode `#`, `?`, `/`, `@` and `%` in the user name and password. Prefer `url_env` for secrets.",
    exampleVariable: "DATABASE_URL",
    scheme: "postgres",
    defaultPort: 5432
  }),
  embedded: Schema.optional(EmbeddedConfig),
  tls: Schema.optional(
    tlsBlock({
      urlParameters: "The URL's libpq parameters `sslmode`, `sslrootcert`, `sslcert` and `sslkey`",
      passphrase: "its passphrase in the URL's `sslpassword`"
    })
  ),
  schema: Schema.optionalWith(
    Schema.NonEmptyString.annotations({
      description: "Schema that unqualified table names (and `table:` shortcuts) resolve to first."
    }).pipe(Schema.filter((name) => identifierLengthProblem("schema name", name) ?? true)),
    { default: () => "public" }
  ),
  statement_timeout_s: secondsField("Server-side statement timeout in seconds for each export query (0 = none).", 300),
  lock_timeout_s: secondsField("How long a query may wait for a lock, in seconds (0 = forever).", 30),
  application_name: Schema.optionalWith(
    Schema.String.annotations({ description: "`application_name` shown in `pg_stat_activity`." }),
    { default: () => "rivet" }
  )
}).pipe(
  Schema.filter(
    (config) => {
      const problem = connectionProblem(config, { embedded: config.embedded })
      if (problem !== undefined) return problem
      if (config.embedded !== undefined && config.tls !== undefined) {
        return "`tls` does not apply to the embedded demo database (it listens on this machine without TLS): remove it, or connect with `url` / `url_env`"
      }
      return true
    },
    { identifier: "PostgresConfig" }
  ),
  Schema.annotations({ description: "Read from PostgreSQL (postgres.js): one read-only snapshot per export." })
)

export type PostgresConfig = typeof PostgresConfig.Type
export type PostgresConfigInput = typeof PostgresConfig.Encoded
