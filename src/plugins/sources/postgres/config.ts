import * as Schema from "effect/Schema"
import { identifierLengthProblem } from "../../../core/source/identifiers.js"
import { connectionUrlFields, secondsField } from "../../../core/source/config-fields.js"
import { connectionProblem } from "../../../core/source/connection.js"
import { urlProblem } from "../../../core/source/postgres-url.js"
import { BLOCK_TLS_MODES } from "../../../core/source/postgres-tls.js"

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

const tlsPath = (what: string) =>
  Schema.optional(
    Schema.NonEmptyString.annotations({
      description: `${what} (PEM), relative to the config file's directory.`
    })
  )

const TlsConfig = Schema.Struct({
  mode: Schema.optional(
    Schema.Literal(...BLOCK_TLS_MODES).annotations({
      description:
        "`disable`: no TLS. `require`: encrypted, the certificate not checked (checked against `ca_file` when one is set, as libpq does). `verify-ca`: the certificate must chain to `ca_file` (or Node's default CAs). `verify-full` (the default): also the host name must match the certificate."
    })
  ),
  ca_file: tlsPath("CA certificate(s) the server's certificate must chain to; without it, Node's default CA store"),
  cert_file: tlsPath("Client certificate, for servers that ask for one (with `key_file`)"),
  key_file: tlsPath("Private key of the client certificate (unencrypted, or its passphrase in the URL's `sslpassword`)"),
  accept_invalid_hostnames: Schema.optional(
    Schema.Boolean.annotations({
      description: "With `verify-full`: do not check the host name (the same as `verify-ca`)."
    })
  )
}).annotations({
  description:
    "TLS to the server. The URL's libpq parameters `sslmode`, `sslrootcert`, `sslcert` and `sslkey` say the same; when both are given they must agree."
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
  tls: Schema.optional(TlsConfig),
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
